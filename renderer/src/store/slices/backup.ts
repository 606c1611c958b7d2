// The backup slice (desktop, embedded server): "Back up…" and "Restore…" in Settings. Main shows the
// native folder dialog and the confirmation; null from main means the person cancelled. After a
// restore the server holds other data (another customer perhaps, other event ids): nothing of the
// old view stays, and the app starts again on the restored data.
import { ops, type BackupSlice, type SliceCreator } from '../state.ts';
import { toApiError } from '../../platform/index.ts';
import { formatBytes, formatDateTime } from '../../lib/format.ts';

/** How often a running backup or restore is asked what it is doing. */
const PROGRESS_POLL_MS = 1000;

export const createBackupSlice: SliceCreator<BackupSlice> = (set, get) => {
  /** Runs the person's backup or restore with `backupPending` set and its progress asked for every second. */
  const pending = async (kind: 'backup' | 'restore', work: () => Promise<void>) => {
    set({ backupPending: kind, backupProgress: null, backupError: null });
    const poll = setInterval(() => {
      ops()
        .backupProgress()
        .then((progress) => {
          if (get().backupPending === kind) set({ backupProgress: progress });
        })
        .catch(() => {});
    }, PROGRESS_POLL_MS);
    try {
      await work();
    } catch (e) {
      set({ backupError: toApiError(e) });
    } finally {
      clearInterval(poll);
      set({ backupPending: null, backupProgress: null });
    }
  };
  return {
    backupPending: null,
    backupProgress: null,
    backupError: null,
    lastBackup: null,
    lastRestore: null,
    autoBackup: null,
    autoBackupPending: false,

    async loadAutoBackup() {
      try {
        set({ autoBackup: await ops().autoBackup() });
      } catch (e) {
        set({ backupError: toApiError(e) });
      }
    },

    async setAutoBackup(enabled) {
      set({ autoBackupPending: true, backupError: null });
      try {
        const before = get().autoBackup?.last_at;
        const state = await ops().setAutoBackup(enabled);
        if (state) set({ autoBackup: state });
        if (state?.enabled && state.last_at && state.last_at !== before) get().toast(`Backed up into ${state.folder}; the next backup is due in a day.`);
      } catch (e) {
        set({ backupError: toApiError(e) });
      } finally {
        set({ autoBackupPending: false });
      }
    },

    backupData: () =>
      pending('backup', async () => {
        const done = await ops().backupData();
        if (!done) return;
        set({ lastBackup: done });
        get().toast(`Backed up (${formatBytes(done.bytes)}) into ${done.folder}.`);
      }),

    restoreData: () =>
      pending('restore', async () => {
        const done = await ops().restoreData();
        if (!done) return;
        set({
          lastRestore: done,
          sessions: {}, sessionOrder: [], speedHistory: {}, events: [], lastEventId: undefined, serverInfo: null, timelines: {},
          clients: {}, clientOrder: [], clientsLoad: 'idle', overrides: {}, devices: {}, subscriptions: {},
          limits: { global: { load: 'idle', record: null, error: null, saving: false }, client: { load: 'idle', record: null, error: null, saving: false }, session: { load: 'idle', record: null, error: null, saving: false } },
        });
        get().toast(`Restored the backup of ${formatDateTime(done.made_at)}.`);
        await get().startApp();
      }),
  };
};
