// What each IPC operation does: most pass straight to the API client (the Result crosses IPC
// unchanged); the connection and LAN-sharing ones go to Endpoints, backup and restore to DataBackups,
// the stream ones to RendererStreams, and
// "Copy API token" writes the clipboard here, so the token never reaches the renderer.
import type { ApiClient } from './api-client.ts';
import type { AutoBackup } from './auto-backup.ts';
import type { DataBackups } from './backup.ts';
import type { Endpoints } from './endpoint.ts';
import type { Handlers } from './ipc.ts';
import type { RendererStreams } from './renderer-streams.ts';
import { fail } from '../common/result.ts';

export interface HandlerDeps {
  api: ApiClient;
  endpoints: Endpoints;
  streams: RendererStreams;
  clipboard: { writeText(text: string): void };
  backups: DataBackups;
  autoBackup: AutoBackup;
}

export function createHandlers({ api, endpoints, streams, clipboard, backups, autoBackup }: HandlerDeps): Handlers {
  return {
    connectionInfo: async () => ({ ok: true, value: endpoints.info() }),
    saveConnection: (c) => endpoints.save(c),
    serverInfo: () => api.serverInfo(),
    runDoctor: () => api.doctor(),
    openApiDocument: () => api.openApi(),
    copyApiToken: async () => {
      const token = endpoints.current()?.token;
      if (!token) return fail(401, 'unauthorized', 'No token is configured.');
      clipboard.writeText(token);
      return { ok: true, value: true };
    },
    listZones: () => api.zones(),
    listSessions: (q) => api.listSessions(q),
    getSession: (id) => api.getSession(id),
    createSession: (b) => api.createSession(b),
    sessionStatus: (id) => api.status(id),
    pauseSession: (id) => api.pause(id),
    resumeSession: (id) => api.resume(id),
    getLimits: (s) => api.getLimits(s),
    updateLimits: (s, b) => api.updateLimits(s, b),
    deleteLimits: (s) => api.deleteLimits(s),
    getSubscription: (c) => api.getSubscription(c),
    putSubscription: (c) => api.putSubscription(c),
    deleteSubscription: (c) => api.deleteSubscription(c),
    getSubscriptionSettings: () => api.getSubscriptionSettings(),
    updateSubscriptionSettings: (b) => api.updateSubscriptionSettings(b),
    listAudit: (q) => api.listAudit(q),
    listWebhooks: () => api.listWebhooks(),
    createWebhook: (b) => api.createWebhook(b),
    deleteWebhook: (id) => api.deleteWebhook(id),
    setWebhookEnabled: (id, enabled) => api.setWebhookEnabled(id, enabled),
    webhookDeliveries: (id) => api.webhookDeliveries(id),
    testWebhook: (id) => api.testWebhook(id),
    lanSharing: async () => ({ ok: true, value: endpoints.lanSharing() }),
    setLanSharing: (r) => endpoints.setLanSharing({ enabled: r.enabled, address: r.address }),
    backupData: () => backups.backup(),
    restoreData: () => backups.restore(),
    backupProgress: async () => ({ ok: true, value: backups.progress() }),
    autoBackup: async () => ({ ok: true, value: autoBackup.state() }),
    setAutoBackup: (enabled) => autoBackup.set(enabled),
    usage: (q) => api.usage(q),
    listClients: (q) => api.listClients(q),
    getClient: (c) => api.getClient(c),
    updateClient: (c, b) => api.updateClient(c, b),
    getClientLimits: (c) => api.getClientLimits(c),
    updateClientLimits: (c, b) => api.updateClientLimits(c, b),
    deleteClientLimits: (c) => api.deleteClientLimits(c),
    resetClientUsage: (c) => api.resetClientUsage(c),
    listDevices: (c) => api.listDevices(c),
    deleteDevice: (c, hwid) => api.deleteDevice(c, hwid),
    sessionConnections: (id) => api.sessionConnections(id),
    sessionRefusals: (id) => api.sessionRefusals(id),
    clientRefusals: (c) => api.clientRefusals(c),
    openStream: async (streamId, filter) => streams.open(streamId, filter),
    closeStream: async (streamId) => {
      streams.close(streamId);
      return { ok: true, value: true };
    },
  };
}
