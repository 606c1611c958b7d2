// Keeps API tokens out of the renderer and off the disk in plain text: encrypted with
// Electron's safeStorage (the OS keychain / DPAPI / libsecret) where that is available;
// otherwise in a file only this user can read (0600), and the Settings screen says so (also
// when Linux's safeStorage falls back to its `basic_text` backend, a key fixed in Chromium).
// Never a silent downgrade: a stored encrypted token the keychain cannot decrypt is reported
// (TokenUnreadable), its file kept as it is, and no plain file is written beside it.
import { existsSync, readFileSync, writeFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export interface SafeStorageLike {
  isEncryptionAvailable(): boolean;
  encryptString(plain: string): Buffer;
  decryptString(data: Buffer): string;
  /** Linux only: `basic_text`, `gnome_libsecret`, `kwallet`..., `unknown` before the app is ready. */
  getSelectedStorageBackend?(): string;
}

/** An encrypted token file the keychain cannot decrypt (locked, reset, or another user's). */
export class TokenUnreadable extends Error {
  readonly file: string;
  constructor(file: string, why: string) {
    super(`${file} is encrypted, but the system keychain cannot decrypt it (${why}). The file was left unchanged.`);
    this.file = file;
  }
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

  /** Linux's fallback when no keyring answers: "encrypted" with a key that is the same everywhere. */
  get fixedKey(): boolean {
    return this.encrypted && process.platform !== 'win32' && process.platform !== 'darwin' ? this.#safe.getSelectedStorageBackend?.() === 'basic_text' : false;
  }

  describe(): string {
    if (!this.encrypted) return 'plain file readable only by you (0600): no system keychain available';
    if (this.fixedKey) return 'stored with a fixed key: not protected by a keychain (no GNOME Keyring or KWallet answered; file readable only by you, 0600)';
    return 'encrypted with the system keychain (safeStorage)';
  }

  #file(name: string, enc: boolean): string {
    return join(this.#dir, `${name}.token${enc ? '.enc' : ''}`);
  }

  /** The token, or null when none is stored; throws TokenUnreadable when it is stored encrypted and cannot be decrypted. */
  read(name: string): string | null {
    const enc = this.#file(name, true);
    if (existsSync(enc)) {
      if (!this.encrypted) throw new TokenUnreadable(enc, 'no keychain is available now');
      try {
        return this.#safe.decryptString(readFileSync(enc));
      } catch (e) {
        throw new TokenUnreadable(enc, e instanceof Error ? e.message : String(e));
      }
    }
    const plain = this.#file(name, false);
    if (existsSync(plain)) return readFileSync(plain, 'utf8').trim() || null;
    return null;
  }

  write(name: string, token: string): void {
    const enc = this.encrypted;
    // A plain file would replace an encrypted one only because the keychain went away: refuse.
    if (!enc && existsSync(this.#file(name, true))) throw new TokenUnreadable(this.#file(name, true), 'no keychain is available now, and the token is not written in plain text instead');
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
