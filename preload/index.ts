// The preload bridge: exposes `window.app` (AppBridge) with one function per operation of
// the contract, plus subscriptions that return their unsubscribe. The raw ipcRenderer is
// never exposed. Runs sandboxed: it may use only contextBridge and ipcRenderer.
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
import type { AppBridge, AppOpName, AppOps, NavigateChannel, StreamChannel, StreamMessage } from '../common/ipc-contract.ts';

const STREAM: StreamChannel = 'app:stream';
const NAVIGATE: NavigateChannel = 'app:navigate';

function op<K extends AppOpName>(name: K): AppOps[K] {
  return ((...args: unknown[]) => ipcRenderer.invoke(`app:${name}`, ...args)) as AppOps[K];
}

function listen<T>(channel: string, listener: (value: T) => void): () => void {
  const h = (_e: IpcRendererEvent, value: T) => listener(value);
  ipcRenderer.on(channel, h);
  return () => {
    ipcRenderer.removeListener(channel, h);
  };
}

const bridge: AppBridge = {
  platform: 'electron',
  connectionInfo: op('connectionInfo'),
  saveConnection: op('saveConnection'),
  serverInfo: op('serverInfo'),
  openApiDocument: op('openApiDocument'),
  copyApiToken: op('copyApiToken'),
  listZones: op('listZones'),
  listSessions: op('listSessions'),
  getSession: op('getSession'),
  createSession: op('createSession'),
  sessionStatus: op('sessionStatus'),
  pauseSession: op('pauseSession'),
  resumeSession: op('resumeSession'),
  getLimits: op('getLimits'),
  updateLimits: op('updateLimits'),
  deleteLimits: op('deleteLimits'),
  getSubscription: op('getSubscription'),
  putSubscription: op('putSubscription'),
  deleteSubscription: op('deleteSubscription'),
  getSubscriptionSettings: op('getSubscriptionSettings'),
  updateSubscriptionSettings: op('updateSubscriptionSettings'),
  listAudit: op('listAudit'),
  listWebhooks: op('listWebhooks'),
  createWebhook: op('createWebhook'),
  deleteWebhook: op('deleteWebhook'),
  setWebhookEnabled: op('setWebhookEnabled'),
  webhookDeliveries: op('webhookDeliveries'),
  testWebhook: op('testWebhook'),
  runDoctor: op('runDoctor'),
  sessionConnections: op('sessionConnections'),
  sessionRefusals: op('sessionRefusals'),
  clientRefusals: op('clientRefusals'),
  lanSharing: op('lanSharing'),
  setLanSharing: op('setLanSharing'),
  backupData: op('backupData'),
  restoreData: op('restoreData'),
  backupProgress: op('backupProgress'),
  autoBackup: op('autoBackup'),
  setAutoBackup: op('setAutoBackup'),
  usage: op('usage'),
  listClients: op('listClients'),
  getClient: op('getClient'),
  updateClient: op('updateClient'),
  getClientLimits: op('getClientLimits'),
  updateClientLimits: op('updateClientLimits'),
  deleteClientLimits: op('deleteClientLimits'),
  resetClientUsage: op('resetClientUsage'),
  listDevices: op('listDevices'),
  deleteDevice: op('deleteDevice'),
  openStream: op('openStream'),
  closeStream: op('closeStream'),
  onStreamMessage: (l) => listen<StreamMessage>(STREAM, l),
  onNavigate: (l) => listen<string>(NAVIGATE, l),
};

contextBridge.exposeInMainWorld('app', bridge);
