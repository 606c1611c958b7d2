// Persisted settings (userData/settings.json): the endpoint mode, the remote base URL and
// the embedded server's port. Tokens are not here: see token-store.ts.
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';

export interface Settings {
  mode: 'embedded' | 'remote';
  remoteBaseUrl?: string;
  embeddedPort?: number;
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
