// The clients slice: every client with its standing (status, usage in the period, limits in
// force and where each comes from, expiry, disabled), each client's own limits override, and
// the devices that fetched its subscription; with disable/enable, expiry, reset usage,
// override save/remove and device removal. A server without the clients API (404) leaves the
// list `unsupported`: the screens then show what the sessions alone tell.
import { MAX_LISTED_CLIENTS, type Client } from '../../../../common/client-types.ts';
import { ops, type ClientsSlice, type DevicesEntry, type OverrideState, type SliceCreator, type State } from '../state.ts';
import { toApiError } from '../../platform/index.ts';

const EMPTY_OVERRIDE: OverrideState = { load: 'idle', record: null, error: null, saving: false };
const EMPTY_DEVICES: DevicesEntry = { load: 'idle', devices: [], error: null, removing: null };

/** The server answered 404 for the route itself (no clients API), not for one client. */
const noRoute = (code: string, status: number) => status === 404 && (code === 'not_found' || code === 'route_not_found');

type PagePart = Pick<ClientsSlice, 'overrides' | 'devices' | 'loadClientLimits' | 'saveClientLimits' | 'deleteClientLimits' | 'loadDevices' | 'removeDevice'>;

/** Reads the named clients (those not held yet, with `missingOnly`) in requests of at most MAX_LISTED_CLIENTS; merges them in. */
async function loadNamed(set: Parameters<SliceCreator<unknown>>[0], get: () => State, ids: string[], missingOnly: boolean): Promise<void> {
  const want = missingOnly ? ids.filter((id) => !get().clients[id]) : ids;
  if (get().clientsLoad === 'unsupported' || want.length === 0) return;
  const chunks = Array.from({ length: Math.ceil(want.length / MAX_LISTED_CLIENTS) }, (_, i) => want.slice(i * MAX_LISTED_CLIENTS, (i + 1) * MAX_LISTED_CLIENTS));
  try {
    const answers = await Promise.all(chunks.map((client_id) => ops().listClients({ client_id })));
    const fresh = Object.fromEntries(answers.flatMap((a) => a.clients).map((c) => [c.client_id, c]));
    set((s) => ({ clients: { ...s.clients, ...fresh } }));
  } catch (e) {
    const err = toApiError(e);
    if (noRoute(err.code, err.status)) set({ clientsLoad: 'unsupported' });
    else get().noteGlobalError(err);
  }
}

const createListPart: SliceCreator<Omit<ClientsSlice, keyof PagePart>> = (set, get) => {
  const putClient = (c: Client) =>
    set((s) => ({ clients: { ...s.clients, [c.client_id]: c }, clientOrder: s.clientOrder.includes(c.client_id) ? s.clientOrder : [...s.clientOrder, c.client_id] }));
  const pending = (id: string, on: boolean, error: ClientsSlice['clientError'][string] = null) =>
    set((s) => ({ clientPending: { ...s.clientPending, [id]: on }, clientError: { ...s.clientError, [id]: error } }));

  /** Runs one change of a client; its answer (the client) replaces the stored one. */
  async function change(id: string, run: () => Promise<Client>, done: string): Promise<boolean> {
    pending(id, true);
    try {
      putClient(await run());
      pending(id, false);
      get().toast(done);
      return true;
    } catch (e) {
      pending(id, false, get().noteGlobalError(e));
      return false;
    }
  }

  return {
    clients: {},
    clientOrder: [],
    clientsLoad: 'idle',
    clientsError: null,
    clientPending: {},
    clientError: {},

    async loadClients() {
      if (get().clientsLoad === 'unsupported') return;
      set((s) => ({ clientsLoad: s.clientsLoad === 'ready' ? 'ready' : 'loading', clientsError: null }));
      try {
        const { clients } = await ops().listClients({});
        set({ clients: Object.fromEntries(clients.map((c) => [c.client_id, c])), clientOrder: clients.map((c) => c.client_id), clientsLoad: 'ready' });
      } catch (e) {
        const err = toApiError(e);
        if (noRoute(err.code, err.status)) set({ clientsLoad: 'unsupported' });
        else set({ clientsLoad: 'error', clientsError: get().noteGlobalError(err) });
      }
    },

    loadClientsOf: (ids, opts) => loadNamed(set, get, ids, opts?.missingOnly ?? false),

    async loadClient(id) {
      try {
        putClient(await ops().getClient(id));
        set((s) => ({ clientError: { ...s.clientError, [id]: null } }));
      } catch (e) {
        const err = toApiError(e);
        if (noRoute(err.code, err.status)) set({ clientsLoad: 'unsupported' });
        else set((s) => ({ clientError: { ...s.clientError, [id]: get().noteGlobalError(err) } }));
      }
    },

    updateClient(id, body) {
      const words =
        body.disabled === true
          ? `${id} is disabled: its connections were cut and new ones are refused.`
          : body.disabled === false
            ? `${id} is enabled again.`
            : body.expires_at
              ? `${id} now expires ${new Date(body.expires_at).toLocaleString()}.`
              : `${id} no longer expires.`;
      return change(id, () => ops().updateClient(id, body), words);
    },

    resetClientUsage: (id) => change(id, () => ops().resetClientUsage(id), `${id}'s usage starts over from zero.`),
  };
};

/** The client page's own reads: the client's limits override and its devices. */
const createPagePart: SliceCreator<PagePart> = (set, get) => {
  const patchOverride = (id: string, p: Partial<OverrideState>) =>
    set((s) => ({ overrides: { ...s.overrides, [id]: { ...(s.overrides[id] ?? EMPTY_OVERRIDE), ...p } } }));
  const patchDevices = (id: string, p: Partial<DevicesEntry>) => set((s) => ({ devices: { ...s.devices, [id]: { ...(s.devices[id] ?? EMPTY_DEVICES), ...p } } }));
  return {
    overrides: {},
    devices: {},

    async loadClientLimits(id) {
      patchOverride(id, { load: 'loading', error: null });
      try {
        patchOverride(id, { load: 'ready', record: await ops().getClientLimits(id) });
      } catch (e) {
        const err = toApiError(e);
        if (noRoute(err.code, err.status)) set({ clientsLoad: 'unsupported' });
        else if (err.status === 404) patchOverride(id, { load: 'unset', record: null });
        else if (err.status === 403) patchOverride(id, { load: 'forbidden', record: null, error: err });
        else patchOverride(id, { load: 'error', error: get().noteGlobalError(err) });
      }
    },

    async saveClientLimits(id, body) {
      patchOverride(id, { saving: true, error: null });
      try {
        const record = await ops().updateClientLimits(id, body);
        patchOverride(id, { load: 'ready', record, saving: false });
        get().toast(`${id}'s own limits saved.`);
        void get().loadClient(id);
        return true;
      } catch (e) {
        patchOverride(id, { saving: false, error: get().noteGlobalError(e) });
        return false;
      }
    },

    async deleteClientLimits(id) {
      patchOverride(id, { saving: true, error: null });
      try {
        await ops().deleteClientLimits(id);
      } catch (e) {
        const err = toApiError(e);
        // Already gone (another window, the API): that is what was asked for.
        if (err.status !== 404) {
          patchOverride(id, { saving: false, error: get().noteGlobalError(err) });
          return false;
        }
      }
      patchOverride(id, { load: 'unset', record: null, saving: false });
      get().toast(`${id}'s own limits removed: the client limits template applies.`);
      void get().loadClient(id);
      return true;
    },

    async loadDevices(id) {
      patchDevices(id, { load: get().devices[id]?.load === 'ready' ? 'ready' : 'loading', error: null });
      try {
        patchDevices(id, { load: 'ready', devices: (await ops().listDevices(id)).devices });
      } catch (e) {
        patchDevices(id, { load: 'error', error: get().noteGlobalError(e) });
      }
    },

    async removeDevice(id, hwid) {
      patchDevices(id, { removing: hwid, error: null });
      try {
        await ops().deleteDevice(id, hwid);
        set((s) => {
          const cur = s.devices[id] ?? EMPTY_DEVICES;
          return { devices: { ...s.devices, [id]: { ...cur, removing: null, devices: cur.devices.filter((d) => d.hwid !== hwid) } } };
        });
        get().toast('Device removed: it counts against the device limit no more.');
        return true;
      } catch (e) {
        patchDevices(id, { removing: null, error: get().noteGlobalError(e) });
        return false;
      }
    },
  };
};

export const createClientsSlice: SliceCreator<ClientsSlice> = (...a) => ({ ...createListPart(...a), ...createPagePart(...a) });
