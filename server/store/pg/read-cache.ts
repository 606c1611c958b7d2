// PostgreSQL's cache of getCached reads (a session's status read, a creation's checks, limits, a
// client's record): this process's one ReadCache (../sql/read-cache.ts), shared by every runner on
// its pool, answered and filled only while the LISTEN connection (listener.ts) is up.
// An entry is dropped by:
//   - this instance's write to a table it read, at commit, before the write is acknowledged
//     (pg-runner.ts): read-your-writes on this instance;
//   - the `vad_reads` notification (payload: the table), sent by a statement-level trigger
//     (migration 21, READ_TABLES) when any instance commits a write, but an INSERT into sessions
//     (INSERT_SILENT: a read of it that found nothing is not kept);
//   - every (re)connection of the LISTEN connection (notifications sent while it was down are lost).
// Across instances a cached row is answered only after a fence (PgListener.sync explains why), so a
// read on instance B sees a write acknowledged on instance A before it began. Waiting reads share a
// fence (one trivial statement per batch); one that fails or takes over 500 ms sends them to the database.
import { CHANNELS, INSERT_SILENT, READ_TABLES } from '../sql/channels.ts';
import { ReadCache } from '../sql/read-cache.ts';
import type { PgListener } from './listener.ts';

export class PgReadCache {
  readonly cache = new ReadCache({ tables: READ_TABLES, insertSilent: INSERT_SILENT });
  private listener: PgListener | undefined;

  /** True while the cache may answer and be filled: the LISTEN connection carrying `vad_reads` is up. */
  get live(): boolean {
    return this.listener?.connected ?? false;
  }

  /** True once follow() was called (until its stop): only then can anything be cached. */
  get following(): boolean {
    return this.listener !== undefined;
  }

  /** True once every notification committed before the call has been handled (PgListener.sync). */
  fence(): Promise<boolean> {
    return this.listener?.sync() ?? Promise.resolve(false);
  }

  /** Starts following `listener` (the cache is bypassed until then); returns the stop. */
  follow(listener: PgListener): () => void {
    this.listener = listener;
    this.cache.clear();
    const offNotice = listener.onNotification((channel, payload) => {
      if (channel === CHANNELS.reads) this.cache.invalidate(payload || '*');
    });
    const offReconnect = listener.onReconnect(() => this.cache.clear());
    return () => {
      offNotice();
      offReconnect();
      this.listener = undefined;
      this.cache.clear();
    };
  }
}
