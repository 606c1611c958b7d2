// Settings → Backup (desktop, embedded server): "Back up…" copies the embedded server's data folder
// (server/backup/) into a new folder inside the one the person picks, while the server runs;
// "Restore…" checks the backup the person picks, asks before it replaces anything, then stops the
// embedded server, puts the backup back (what it replaces is moved aside, never deleted) and starts
// the server again. The window then shows the restored data, as the backup's customer; if the
// backup does not know the app's API token, a new owner token is made for it.
import type { BackupDone, BackupProgress, RestoreDone } from '../common/api-types.ts';
import { fail, type Result } from '../common/result.ts';
import { BackupRefused, type Progress } from '../server/backup/files.ts';
import { backupInto } from '../server/backup/make.ts';
import { checkBackup, restoreBackup } from '../server/backup/restore.ts';
import { EMBEDDED_CUSTOMER, type Endpoints } from './endpoint.ts';
import type { SettingsFile } from './settings.ts';

/** The two native dialogs a backup needs (Electron's `dialog`, shown over the window). */
export interface BackupDialogs {
  /** A folder chosen by the person, or null when they cancelled. */
  chooseFolder(o: { title: string; buttonLabel: string; create: boolean }): Promise<string | null>;
  /** True when the person chose the action button; the default and Escape are Cancel. */
  confirm(o: { message: string; detail: string; action: string }): Promise<boolean>;
}

export interface DataBackupsDeps {
  endpoints: Endpoints;
  settings: SettingsFile;
  dialogs: BackupDialogs;
  /** Where progress lines of a large database go. */
  log?: (line: string) => void;
}

const REMOTE = 'The app uses a remote server: back it up on its own machine (vpn-access backup --out DIR, or pg_dump for a cluster).';

/** The customer to show after a restore: the one shown before if the backup has it, else `local`, else its oldest. */
export function customerAfterRestore(before: string, restored: string[]): string {
  if (restored.includes(before)) return before;
  if (restored.includes(EMBEDDED_CUSTOMER)) return EMBEDDED_CUSTOMER;
  return restored[0] ?? EMBEDDED_CUSTOMER;
}

export class DataBackups {
  #d: DataBackupsDeps;
  /** One backup or restore at a time. */
  #busy = false;
  /** The step the running one is in (server/backup/ tells each as it begins), for the window. */
  #step: { doing: string; bytes: number; since: number } | null = null;

  constructor(deps: DataBackupsDeps) {
    this.#d = deps;
  }

  /** The refusal when the app uses a remote server (backed up where it runs), else null. */
  remoteRefusal<T>(): Result<T> | null {
    return this.#d.endpoints.info().mode === 'embedded' ? null : fail(409, 'not_supported', REMOTE);
  }

  /** Runs `work` unless a backup or restore is running (then false, and it did not run). */
  async ifFree(work: () => Promise<void>): Promise<boolean> {
    if (this.#busy) return false;
    this.#busy = true;
    try {
      await work();
      return true;
    } finally {
      this.#busy = false;
    }
  }

  /** Runs `work` (one of the person's) when no other backup or restore runs; a refused backup is a 400. */
  async #once<T>(work: (shown: Progress) => Promise<Result<T>>): Promise<Result<T>> {
    let out: Result<T> = fail(409, 'conflict', 'A backup or restore is already running: wait for it to finish.');
    const shown: Progress = { line: (text) => this.#d.log?.(text), step: (doing, bytes) => (this.#step = { doing, bytes, since: Date.now() }) };
    await this.ifFree(async () => {
      try {
        out = await work(shown);
      } catch (e) {
        if (!(e instanceof BackupRefused)) throw e;
        out = fail(400, 'backup_refused', e.message);
      } finally {
        this.#step = null;
      }
    });
    return out;
  }

  /** What the person's running backup or restore is doing, or null (none runs, or a dialog waits for the person). */
  progress(): BackupProgress | null {
    const s = this.#step;
    return s && { doing: s.doing, bytes: s.bytes, seconds: Math.floor((Date.now() - s.since) / 1000) };
  }

  backup(): Promise<Result<BackupDone | null>> {
    return this.#once(async (shown) => {
      const refused = this.remoteRefusal<BackupDone | null>();
      if (refused) return refused;
      const parent = await this.#d.dialogs.chooseFolder({ title: 'Back up the app’s data into a folder', buttonLabel: 'Back up here', create: true });
      if (!parent) return { ok: true, value: null };
      const made = await backupInto(this.#d.endpoints.serverDir, parent, { say: shown });
      return { ok: true, value: { folder: made.out, made_at: made.made_at, bytes: made.bytes, files: made.files } };
    });
  }

  restore(): Promise<Result<RestoreDone | null>> {
    return this.#once(async (shown) => {
      const refused = this.remoteRefusal<RestoreDone | null>();
      if (refused) return refused;
      const from = await this.#d.dialogs.chooseFolder({ title: 'Restore the app’s data from a backup folder', buttonLabel: 'Restore from here', create: false });
      if (!from) return { ok: true, value: null };
      const manifest = await checkBackup(from, shown);
      this.#step = null; // nothing runs while the question is shown
      const sure = await this.#d.dialogs.confirm({
        message: `Replace the app’s data with the backup of ${new Date(manifest.made_at).toLocaleString()}?`,
        detail:
          'Sessions, clients, limits, tokens, webhooks and subscription keys become what the backup holds. What the app holds now is moved into a "replaced-…" ' +
          'folder of its data folder, not deleted. The server restarts: open connections are cut and clients reconnect.',
        action: 'Restore',
      });
      if (!sure) return { ok: true, value: null };
      const { endpoints, settings } = this.#d;
      const before = settings.get().embeddedCustomer ?? EMBEDDED_CUSTOMER;
      let customer = before;
      const { value: done, tokenRenewed } = await endpoints.replaceData(async (dir) => {
        const restored = await restoreBackup(from, dir, { force: true, say: shown });
        customer = customerAfterRestore(before, restored.customers);
        settings.update({ embeddedCustomer: customer });
        shown.step?.('starting the server on', restored.bytes);
        return restored;
      });
      return { ok: true, value: { made_at: done.made_at, replaced_into: done.replaced_into, customer, token_renewed: tokenRenewed } };
    });
  }
}
