// The zones slice: the zone catalogue for the new-session form, the proxy screen and filters.
import { ops, type SliceCreator, type ZonesSlice } from '../state.ts';

export const createZonesSlice: SliceCreator<ZonesSlice> = (set, get) => ({
  zones: [],
  zonesLoad: 'idle',
  zonesError: null,

  async loadZones(rethrow = false) {
    set({ zonesLoad: 'loading', zonesError: null });
    try {
      const { zones } = await ops().listZones();
      set({ zones, zonesLoad: 'ready' });
    } catch (e) {
      const err = get().noteGlobalError(e);
      set({ zonesLoad: 'error', zonesError: err });
      if (rethrow) throw e;
    }
  },
});
