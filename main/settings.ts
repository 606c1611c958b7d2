// Persisted settings (userData/settings.json): the endpoint mode, the remote base URL, the
// embedded server's port and whether it lets other devices connect (and on which address), the
// customer its window shows, and the daily backup.
// Tokens are not here: see token-store.ts.
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';

export interface Settings {
  mode: 'embedded' | 'remote';
  remoteBaseUrl?: string;
  embeddedPort?: number;
  /** "Let other devices connect": the embedded server listens on `address` instead of loopback. */
  lanSharing?: { enabled: boolean; address: string };
  /** The customer the embedded server's window shows: `local`, or a restored backup's customer. */
  embeddedCustomer?: string;
  /** The daily backup: where, the last one made, the last try and its failure. */
  autoBackup?: { enabled: boolean; folder: string; lastAt?: string; triedAt?: string; lastError?: string };
}

export class SettingsFile {
  readonly path: string;
  #value: Settings;

  constructor(dir: string) {
    this.path = join(dir, 'settings.json');
    this.#value = { mode: 'embedded' };
    try {
      const v = JSON.parse(readFileSync(this.path, 'utf8')) as Partial<Settings>;
      if (v.mode === 'remote' || v.mode === 'embedded') this.#value.mode = v.mode;
      if (typeof v.remoteBaseUrl === 'string') this.#value.remoteBaseUrl = v.remoteBaseUrl;
      if (typeof v.embeddedPort === 'number') this.#value.embeddedPort = v.embeddedPort;
      if (typeof v.embeddedCustomer === 'string' && v.embeddedCustomer) this.#value.embeddedCustomer = v.embeddedCustomer;
      const auto = v.autoBackup;
      if (auto && typeof auto.enabled === 'boolean' && typeof auto.folder === 'string') {
        const text = (x: unknown) => (typeof x === 'string' ? x : undefined);
        this.#value.autoBackup = { enabled: auto.enabled, folder: auto.folder, lastAt: text(auto.lastAt), triedAt: text(auto.triedAt), lastError: text(auto.lastError) };
      }
      const lan = v.lanSharing;
      if (lan && typeof lan.enabled === 'boolean' && typeof lan.address === 'string') this.#value.lanSharing = { enabled: lan.enabled, address: lan.address };
    } catch {
      /* first start, or unreadable: defaults */
    }
  }

  get(): Settings {
    return { ...this.#value };
  }

  update(patch: Partial<Settings>): Settings {
    this.#value = { ...this.#value, ...patch };
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.#value, null, 2), { mode: 0o600 });
    renameSync(tmp, this.path);
    return this.get();
  }
}
