// Settings → Backup → "Back up every day" (desktop, embedded server): once a day while the app runs
// (and soon after a start when the last one is a day old), a backup of the embedded server's data
// into a dated folder of the folder the person chose, the newest KEEP kept (server/backup/make.ts).
// A failure (the folder gone: a drive unplugged) is kept and shown until a backup works again, and
// tried again an hour later. Never while a backup or restore of the person's own runs.
import { existsSync } from 'node:fs';
import type { AutoBackupState } from '../common/api-types.ts';
import type { Result } from '../common/result.ts';
import { backupInto } from '../server/backup/make.ts';
import type { BackupDialogs, DataBackups } from './backup.ts';
import type { Endpoints } from './endpoint.ts';
import type { Settings, SettingsFile } from './settings.ts';

export const AUTO_KEEP = 7;
const DAY_MS = 24 * 3600_000;
const RETRY_MS = 3600_000;
/** How often whether one is due is checked, and how long after a start the first check waits. */
const CHECK_MS = 10 * 60_000;
const FIRST_CHECK_MS = 60_000;

export interface AutoBackupDeps {
  endpoints: Endpoints;
  settings: SettingsFile;
  backups: DataBackups;
  dialogs: BackupDialogs;
  now?: () => number;
}

type Saved = NonNullable<Settings['autoBackup']>;

export class AutoBackup {
  #d: AutoBackupDeps;
  #timers: NodeJS.Timeout[] = [];

  constructor(deps: AutoBackupDeps) {
    this.#d = deps;
  }

  #now(): number {
    return (this.#d.now ?? Date.now)();
  }

  #saved(): Saved | undefined {
    return this.#d.settings.get().autoBackup;
  }

  #save(patch: Partial<Saved>): void {
    const cur = this.#saved();
    if (cur) this.#d.settings.update({ autoBackup: { ...cur, ...patch } });
  }

  state(): AutoBackupState {
    const a = this.#saved();
    const due = a?.enabled ? Math.max(a.lastAt ? Date.parse(a.lastAt) + DAY_MS : 0, a.triedAt && a.lastError ? Date.parse(a.triedAt) + RETRY_MS : 0, this.#now()) : null;
    return { enabled: !!a?.enabled, folder: a?.folder ?? null, keep: AUTO_KEEP, last_at: a?.lastAt ?? null, last_error: a?.lastError ?? null, next_at: due === null ? null : new Date(due).toISOString() };
  }

  /** Turns it on (asking for the folder; null when the person cancelled: nothing changes) and backs up at once, or off. */
  async set(enabled: boolean): Promise<Result<AutoBackupState | null>> {
    const refused = this.#d.backups.remoteRefusal<AutoBackupState | null>();
    if (refused) return refused;
    if (!enabled) {
      this.#save({ enabled: false });
      return { ok: true, value: this.state() };
    }
    const folder = await this.#d.dialogs.chooseFolder({ title: 'Back up the app’s data every day into a folder', buttonLabel: 'Back up here every day', create: true });
    if (!folder) return { ok: true, value: null };
    const before = this.#saved();
    this.#d.settings.update({ autoBackup: { enabled: true, folder, ...(before?.folder === folder ? { lastAt: before.lastAt } : {}) } });
    await this.runIfDue();
    return { ok: true, value: this.state() };
  }

  /** Makes the backup when one is due; the outcome is kept in the settings. */
  async runIfDue(): Promise<void> {
    const a = this.#saved();
    if (!a?.enabled || this.#d.backups.remoteRefusal()) return;
    if (Date.parse(this.state().next_at ?? '') > this.#now()) return;
    await this.#d.backups.ifFree(async () => {
      const at = new Date(this.#now()).toISOString();
      try {
        // A folder gone (a drive not connected) is not made again where its mount point was.
        if (!existsSync(a.folder)) throw new Error(`${a.folder} is not there (a drive not connected?)`);
        await backupInto(this.#d.endpoints.serverDir, a.folder, { keep: AUTO_KEEP, at: new Date(this.#now()) });
        this.#save({ lastAt: at, triedAt: at, lastError: undefined });
      } catch (err) {
        this.#save({ triedAt: at, lastError: err instanceof Error ? err.message : String(err) });
        console.error(`automatic backup into ${a.folder} failed:`, err);
      }
    });
  }

  /** Checks soon after the start, then every CHECK_MS. */
  start(): void {
    const check = () => void this.runIfDue();
    this.#timers.push(setTimeout(check, FIRST_CHECK_MS).unref(), setInterval(check, CHECK_MS).unref());
  }

  dispose(): void {
    for (const t of this.#timers) clearTimeout(t);
    this.#timers = [];
  }
}
