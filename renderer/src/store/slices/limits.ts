// The limits slice: the three limit records (global, client, session), each with its own
// load state (unset when the server has none, forbidden for an agent token) and save state.
import type { LimitScope } from '../../../../common/api-types.ts';
import { ops, type LimitsSlice, type LimitsState, type SliceCreator } from '../state.ts';

export function scopeTitle(scope: LimitScope): string {
  return scope === 'global' ? 'Global' : scope === 'client' ? 'Client' : 'Session';
}

const emptyLimits = (): LimitsState => ({ load: 'idle', record: null, error: null, saving: false });

export const createLimitsSlice: SliceCreator<LimitsSlice> = (set, get) => {
  const patch = (scope: LimitScope, p: Partial<LimitsState>) => set((s) => ({ limits: { ...s.limits, [scope]: { ...s.limits[scope], ...p } } }));
  return {
    limits: { global: emptyLimits(), client: emptyLimits(), session: emptyLimits() },

    async loadLimits(scope) {
      patch(scope, { load: 'loading', error: null });
      try {
        const record = await ops().getLimits(scope);
        patch(scope, { load: 'ready', record });
      } catch (e) {
        const err = get().noteGlobalError(e);
        if (err.code === 'limits_not_found' || (err.status === 404 && err.code !== 'not_found')) patch(scope, { load: 'unset', record: null });
        else if (err.status === 403) patch(scope, { load: 'forbidden', record: null, error: err });
        else patch(scope, { load: 'error', error: err });
      }
    },
    async saveLimits(scope, body) {
      patch(scope, { saving: true, error: null });
      try {
        const record = await ops().updateLimits(scope, body);
        patch(scope, { load: 'ready', record, saving: false });
        get().toast(`${scopeTitle(scope)} limits saved.`);
        return true;
      } catch (e) {
        const err = get().noteGlobalError(e);
        patch(scope, { saving: false, error: err, ...(err.status === 403 ? { load: 'forbidden' as const } : {}) });
        return false;
      }
    },
    async deleteLimits(scope) {
      patch(scope, { saving: true, error: null });
      try {
        await ops().deleteLimits(scope);
        patch(scope, { load: 'unset', record: null, saving: false });
        get().toast(`${scopeTitle(scope)} limits deleted: no limits apply at this level.`);
      } catch (e) {
        const err = get().noteGlobalError(e);
        if (err.code === 'limits_not_found') patch(scope, { load: 'unset', record: null, saving: false });
        else patch(scope, { saving: false, error: err, ...(err.status === 403 ? { load: 'forbidden' as const } : {}) });
      }
    },
  };
};
