// Keeps API tokens out of the renderer and off the disk in plain text: encrypted with
// Electron's safeStorage (the OS keychain / DPAPI / libsecret) where that is available;
// otherwise in a file only this user can read (0600), and the Settings screen says so.
import { existsSync, readFileSync, writeFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export interface SafeStorageLike {
  isEncryptionAvailable(): boolean;
  encryptString(plain: string): Buffer;
  decryptString(data: Buffer): string;
}

export class TokenStore {
  #dir: string;
  #safe: SafeStorageLike;

  constructor(dir: string, safe: SafeStorageLike) {
    this.#dir = dir;
    this.#safe = safe;
  }

  get encrypted(): boolean {
    return this.#safe.isEncryptionAvailable();
  }

  describe(): string {
    return this.encrypted ? 'encrypted with the system keychain (safeStorage)' : 'plain file readable only by you (0600): no system keychain available';
  }

  #file(name: string, enc: boolean): string {
    return join(this.#dir, `${name}.token${enc ? '.enc' : ''}`);
  }

  read(name: string): string | null {
    const enc = this.#file(name, true);
    if (existsSync(enc) && this.encrypted) {
      try {
        return this.#safe.decryptString(readFileSync(enc));
      } catch {
        return null;
      }
    }
    const plain = this.#file(name, false);
    if (existsSync(plain)) return readFileSync(plain, 'utf8').trim() || null;
    return null;
  }

  write(name: string, token: string): void {
    const enc = this.encrypted;
    const target = this.#file(name, enc);
    const tmp = `${target}.tmp`;
    writeFileSync(tmp, enc ? this.#safe.encryptString(token) : token, { mode: 0o600 });
    renameSync(tmp, target);
    // Never leave the other form behind.
    rmSync(this.#file(name, !enc), { force: true });
  }

  remove(name: string): void {
    rmSync(this.#file(name, true), { force: true });
    rmSync(this.#file(name, false), { force: true });
  }
}
