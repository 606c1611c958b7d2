// Electron: every operation goes through the preload bridge `window.app`; the main process
// holds the token, makes the HTTP calls and runs the event streams.
import type { AppBridge, StreamMessage } from '../../../common/ipc-contract.ts';
import type { Platform, StreamHandlers } from './platform.ts';
import { ApiError } from './platform.ts';
import type { EventFilter } from '../../../common/api-types.ts';
import type { Result } from '../../../common/result.ts';

declare global {
  interface Window {
    app?: AppBridge;
  }
}

function unwrap<T>(p: Promise<Result<T>>): Promise<T> {
  return p.then((r) => {
    if (r.ok) return r.value;
    throw new ApiError(r.error);
  });
}

export function createElectronPlatform(bridge: AppBridge): Platform {
  const streams = new Map<string, StreamHandlers>();
  let seq = 0;
  bridge.onStreamMessage((m: StreamMessage) => {
    const h = streams.get(m.streamId);
    if (!h) return;
    if (m.kind === 'event') h.onEvent(m.event);
    else h.onState?.(m.state, m.error ? { ...m.error, details: {} } : undefined);
  });

  const ops: Platform['ops'] = {
    connectionInfo: () => unwrap(bridge.connectionInfo()),
    saveConnection: (s) => unwrap(bridge.saveConnection(s)),
    serverInfo: () => unwrap(bridge.serverInfo()),
    runDoctor: () => unwrap(bridge.runDoctor()),
    sessionConnections: (id) => unwrap(bridge.sessionConnections(id)),
    sessionRefusals: (id) => unwrap(bridge.sessionRefusals(id)),
    clientRefusals: (c) => unwrap(bridge.clientRefusals(c)),
    openApiDocument: () => unwrap(bridge.openApiDocument()),
    copyApiToken: () => unwrap(bridge.copyApiToken()),
    listZones: () => unwrap(bridge.listZones()),
    listSessions: (q) => unwrap(bridge.listSessions(q)),
    getSession: (id) => unwrap(bridge.getSession(id)),
    createSession: (b) => unwrap(bridge.createSession(b)),
    sessionStatus: (id) => unwrap(bridge.sessionStatus(id)),
    pauseSession: (id) => unwrap(bridge.pauseSession(id)),
    resumeSession: (id) => unwrap(bridge.resumeSession(id)),
    getLimits: (s) => unwrap(bridge.getLimits(s)),
    updateLimits: (s, b) => unwrap(bridge.updateLimits(s, b)),
    deleteLimits: (s) => unwrap(bridge.deleteLimits(s)),
    getSubscription: (c) => unwrap(bridge.getSubscription(c)),
    putSubscription: (c) => unwrap(bridge.putSubscription(c)),
    deleteSubscription: (c) => unwrap(bridge.deleteSubscription(c)),
    getSubscriptionSettings: () => unwrap(bridge.getSubscriptionSettings()),
    updateSubscriptionSettings: (b) => unwrap(bridge.updateSubscriptionSettings(b)),
    listAudit: (q) => unwrap(bridge.listAudit(q)),
    listWebhooks: () => unwrap(bridge.listWebhooks()),
    createWebhook: (b) => unwrap(bridge.createWebhook(b)),
    deleteWebhook: (id) => unwrap(bridge.deleteWebhook(id)),
    setWebhookEnabled: (id, enabled) => unwrap(bridge.setWebhookEnabled(id, enabled)),
    webhookDeliveries: (id) => unwrap(bridge.webhookDeliveries(id)),
    testWebhook: (id) => unwrap(bridge.testWebhook(id)),
    lanSharing: () => unwrap(bridge.lanSharing()),
    setLanSharing: (r) => unwrap(bridge.setLanSharing(r)),
    backupData: () => unwrap(bridge.backupData()),
    restoreData: () => unwrap(bridge.restoreData()),
    backupProgress: () => unwrap(bridge.backupProgress()),
    autoBackup: () => unwrap(bridge.autoBackup()),
    setAutoBackup: (enabled) => unwrap(bridge.setAutoBackup(enabled)),
    usage: (q) => unwrap(bridge.usage(q)),
    listClients: (q) => unwrap(bridge.listClients(q)),
    getClient: (c) => unwrap(bridge.getClient(c)),
    updateClient: (c, b) => unwrap(bridge.updateClient(c, b)),
    getClientLimits: (c) => unwrap(bridge.getClientLimits(c)),
    updateClientLimits: (c, b) => unwrap(bridge.updateClientLimits(c, b)),
    deleteClientLimits: (c) => unwrap(bridge.deleteClientLimits(c)),
    resetClientUsage: (c) => unwrap(bridge.resetClientUsage(c)),
    listDevices: (c) => unwrap(bridge.listDevices(c)),
    deleteDevice: (c, hwid) => unwrap(bridge.deleteDevice(c, hwid)),
  };

  return {
    kind: 'electron',
    ops,
    subscribe(filter: EventFilter, handlers: StreamHandlers) {
      const id = `s${++seq}`;
      streams.set(id, handlers);
      void bridge.openStream(id, filter);
      return () => {
        streams.delete(id);
        void bridge.closeStream(id);
      };
    },
    onNavigate: (l) => bridge.onNavigate(l),
  };
}
