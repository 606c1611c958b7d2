// The zones slice: the zone catalogue for the new-session form, the proxy screen and filters.
import type { Zone } from '../../../../common/api-types.ts';
import type { ApiErrorInfo } from '../../../../common/result.ts';
import { ops, type Load, type SliceCreator } from '../state.ts';

export interface ZonesSlice {
  zones: Zone[];
  zonesLoad: Load;
  zonesError: ApiErrorInfo | null;
  /** Loads the zones; `rethrow` lets startApp use the answer as its token check. */
  loadZones(rethrow?: boolean): Promise<void>;
}

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
