// One zustand store made of slices (slices/: app, zones, sessions, events, limits, sharing, clients,
// webhooks, history, backup), in the zustand slices pattern; their shapes are in state.ts. Actions are
// the only writers, and the only way screens reach the platform; screens read through the named
// selectors in selectors.ts; events from the platform enter through bridge.ts; the pure view
// logic is in session-view.ts and event-merge.ts; routes are in routing.ts.
import { create } from 'zustand';
import { createAppSlice } from './slices/app.ts';
import { createBackupSlice } from './slices/backup.ts';
import { createClientsSlice } from './slices/clients.ts';
import { createEventsSlice } from './slices/events.ts';
import { createHistorySlice } from './slices/history.ts';
import { createLimitsSlice } from './slices/limits.ts';
import { createSessionsSlice } from './slices/sessions.ts';
import { createSharingSlice } from './slices/sharing.ts';
import { createWebhooksSlice } from './slices/webhooks.ts';
import { createSupportSlice } from './slices/support.ts';
import { createZonesSlice } from './slices/zones.ts';
import type { State } from './state.ts';

export const useStore = create<State>()((...a) => ({
  ...createAppSlice(...a),
  ...createZonesSlice(...a),
  ...createSessionsSlice(...a),
  ...createEventsSlice(...a),
  ...createLimitsSlice(...a),
  ...createSharingSlice(...a),
  ...createWebhooksSlice(...a),
  ...createSupportSlice(...a),
  ...createHistorySlice(...a),
  ...createClientsSlice(...a),
  ...createBackupSlice(...a),
}));

// The actions never change after the store is made, so components and the bridge import them
// as plain functions.
export const {
  toast,
  dismissToast,
  setRoute,
  navigate,
  noteGlobalError,
  startApp,
  submitToken,
  forgetToken,
  loadServerInfo,
  saveConnection,
  resolveLinkToken,
  setStreamState,
  endRateLimit,
  probeServer,
  setTheme,
  loadZones,
  loadSessions,
  loadMoreSessions,
  syncNewest,
  upsertSession,
  watchHistory,
  applyStatus,
  fetchSession,
  refreshSession,
  pollStatus,
  setSessionFilter,
  createSession,
  setPaused,
  applyEvents,
  setEventFilter,
  clearEvents,
  loadLimits,
  saveLimits,
  deleteLimits,
  loadSubscription,
  putSubscription,
  deleteSubscription,
  loadSubscriptionSettings,
  saveSubscriptionSettings,
  loadLanSharing,
  setLanSharing,
  copyApiToken,
  openApiDocument,
  listWebhooks,
  createWebhook,
  deleteWebhook,
  setWebhookEnabled,
  webhookDeliveries,
  testWebhook,
  runDoctor,
  sessionConnections,
  sessionRefusals,
  clientRefusals,
  watchTimeline,
  loadUsage,
  listAudit,
  loadClients,
  loadClientsOf,
  loadClient,
  updateClient,
  resetClientUsage,
  loadClientLimits,
  saveClientLimits,
  deleteClientLimits,
  loadDevices,
  removeDevice,
  backupData,
  restoreData,
  loadAutoBackup,
  setAutoBackup,
} = useStore.getState();

export type { DevicesEntry, LimitsState, OverrideState, State, SubscriptionEntry, Toast } from './state.ts';
export type { SessionView } from './session-view.ts';
export type { Theme } from './theme.ts';
export { scopeTitle } from './slices/limits.ts';
export { NO_SESSION_FILTER } from './slices/sessions.ts';
export { NO_EVENT_FILTER } from './slices/events.ts';
/** What the actions throw, as a record the screens can show (humanError). */
export { toApiError } from '../platform/index.ts';
