// The sharing slice: each client's subscription (on, off, or not loaded yet) with its
// turn on / rotate / turn off actions, the settings every subscription carries, and the
// desktop's "Let other devices connect" state.
// Turning LAN sharing on or off restarts the embedded server on another address, so the
// connection, the server info, the sessions (their links) and the subscriptions are read again.
import { ops, type SharingSlice, type SliceCreator, type SubscriptionEntry } from '../state.ts';
import { toApiError } from '../../platform/index.ts';

const EMPTY: SubscriptionEntry = { load: 'idle', sub: null, error: null, pending: false };

type LanPart = Pick<SharingSlice, 'lan' | 'lanPending' | 'lanError' | 'loadLanSharing' | 'setLanSharing'>;

const createSubscriptionsPart: SliceCreator<Omit<SharingSlice, keyof LanPart>> = (set, get) => {
  const patch = (clientId: string, p: Partial<SubscriptionEntry>) =>
    set((s) => ({ subscriptions: { ...s.subscriptions, [clientId]: { ...(s.subscriptions[clientId] ?? EMPTY), ...p } } }));

  return {
    subscriptions: {},
    loadSubscriptionSettings: () => ops().getSubscriptionSettings(),
    saveSubscriptionSettings: (body) => ops().updateSubscriptionSettings(body),

    async loadSubscription(clientId) {
      patch(clientId, { load: 'loading', error: null });
      try {
        patch(clientId, { load: 'ready', sub: await ops().getSubscription(clientId) });
      } catch (e) {
        const err = toApiError(e);
        if (err.code === 'subscription_not_found') patch(clientId, { load: 'ready', sub: null });
        else patch(clientId, { load: 'error', error: get().noteGlobalError(err) });
      }
    },

    async putSubscription(clientId) {
      const wasOn = !!get().subscriptions[clientId]?.sub;
      patch(clientId, { pending: true, error: null });
      try {
        patch(clientId, { load: 'ready', sub: await ops().putSubscription(clientId), pending: false });
        get().toast(wasOn ? 'New subscription URL issued: the old one no longer works.' : 'Subscription turned on.');
        return true;
      } catch (e) {
        patch(clientId, { pending: false, error: get().noteGlobalError(e) });
        return false;
      }
    },

    async deleteSubscription(clientId) {
      patch(clientId, { pending: true, error: null });
      try {
        await ops().deleteSubscription(clientId);
        patch(clientId, { load: 'ready', sub: null, pending: false });
        get().toast('Subscription turned off: its URL no longer works.');
        return true;
      } catch (e) {
        const err = toApiError(e);
        // Already off (another window, the API): that is what was asked for.
        if (err.code === 'subscription_not_found') {
          patch(clientId, { load: 'ready', sub: null, pending: false });
          return true;
        }
        patch(clientId, { pending: false, error: get().noteGlobalError(err) });
        return false;
      }
    },
  };
};

const createLanPart: SliceCreator<LanPart> = (set, get) => ({
  lan: null,
  lanPending: false,
  lanError: null,

  async loadLanSharing() {
    try {
      set({ lan: await ops().lanSharing(), lanError: null });
    } catch (e) {
      set({ lanError: toApiError(e) });
    }
  },

  async setLanSharing(request) {
    set({ lanPending: true, lanError: null });
    try {
      const lan = await ops().setLanSharing(request);
      set({ lan });
      // The server listens elsewhere now: read what depends on its address again.
      set({ connection: await ops().connectionInfo() });
      await get().loadServerInfo();
      void get().loadSessions();
      for (const clientId of Object.keys(get().subscriptions)) void get().loadSubscription(clientId);
      get().toast(lan.enabled ? `Other devices can connect to ${lan.address}.` : 'Only this computer can connect now.');
      return true;
    } catch (e) {
      set({ lanError: toApiError(e) });
      void get().loadLanSharing();
      return false;
    } finally {
      set({ lanPending: false });
    }
  },
});

export const createSharingSlice: SliceCreator<SharingSlice> = (...a) => ({ ...createSubscriptionsPart(...a), ...createLanPart(...a) });
