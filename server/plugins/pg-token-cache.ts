// Token look-ups cached for a short time, on the PostgreSQL control plane: the counterpart of
// TokenCache (server/plugins/auth.ts), whose watch of SQLite's data_version becomes the
// `vad_tokens` notification. A token created or revoked on any instance drops every instance's
// cache as soon as the notification arrives; while the LISTEN connection is down (and right
// after it comes back, when notifications may have been missed) the cache instead compares
// the database's token version at most every `checkMs`. `ttlMs` bounds any entry's age.
import type { PgListener } from '../store/pg/listener.ts';
import type { PgStore } from '../store/pg/store.ts';
import { CHANNELS } from '../store/sql/channels.ts';
import type { TokenInfo } from '../store/types.ts';

export class PgTokenCache {
  private readonly store: PgStore;
  private readonly listener: PgListener | null;
  private readonly ttlMs: number;
  private readonly max: number;
  private readonly checkMs: number;
  private readonly entries = new Map<string, { info: TokenInfo | undefined; expires: number }>();
  private readonly unlisten: (() => void)[] = [];
  /** Bumped on every drop: a look-up that started before a drop must not refill the cache. */
  private epoch = 0;
  private generation = -1;
  private version = -1;
  private checkedAt = 0;

  constructor(store: PgStore, listener: PgListener | null, ttlMs = 2000, max = 10_000, checkMs = 100) {
    this.store = store;
    this.listener = listener;
    this.ttlMs = ttlMs;
    this.max = max;
    this.checkMs = checkMs;
    if (listener) {
      this.unlisten.push(
        listener.onNotification((channel) => {
          if (channel === CHANNELS.tokens) this.drop();
        }),
        listener.onReconnect(() => this.drop()),
      );
    }
  }

  private drop(): void {
    this.entries.clear();
    this.epoch++;
  }

  async find(token: string): Promise<TokenInfo | undefined> {
    const now = Date.now();
    if (this.store.tokenGeneration !== this.generation) {
      this.generation = this.store.tokenGeneration;
      this.drop();
    }
    if (!this.listener?.connected && now - this.checkedAt >= this.checkMs) {
      this.checkedAt = now;
      const version = await this.store.dataVersion();
      if (version !== this.version) {
        this.version = version;
        this.drop();
      }
    }
    const hit = this.entries.get(token);
    if (hit && hit.expires > Date.now()) return hit.info;
    const epoch = this.epoch;
    const info = await this.store.findToken(token);
    if (epoch === this.epoch) {
      if (this.entries.size >= this.max) this.entries.clear();
      this.entries.set(token, { info, expires: Date.now() + this.ttlMs });
    }
    return info;
  }

  close(): void {
    for (const off of this.unlisten) off();
    this.unlisten.length = 0;
  }
}
