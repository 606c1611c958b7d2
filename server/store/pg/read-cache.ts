// PostgreSQL's cache of getCached reads (a session's status read, a creation's checks, limits, a
// client's record): the one ReadCache (../sql/read-cache.ts) of this process, shared by every
// runner on its pool, answered and filled only while the LISTEN connection (listener.ts) is up.
//
// What drops an entry:
//   - a write of this instance to a table it read, at its commit (pg-runner.ts), before the
//     write is acknowledged: a read on this instance after its own write sees it;
//   - the `vad_reads` notification (payload: the table), sent by a statement-level trigger on
//     each table cached reads read (migration 21, READ_TABLES) when any instance commits a write
//     (but an INSERT into sessions: INSERT_SILENT, a read of it that found nothing is not kept);
//   - every (re)connection of the LISTEN connection (notifications sent while it was down are
//     lost): the cache starts empty, and while it is down reads go to the database.
// A read's answer is stored only when no table it read was invalidated between the query being
// sent and its answer arriving (ReadCache's generations).
//
// Across instances: a cached row is answered only after a fence (PgListener.sync), a round trip
// on the LISTEN connection begun after the read was asked for. PostgreSQL delivers a listener's
// pending notifications before it answers a statement, so a write committed on another instance
// before the read began has dropped the entry by then: a read on instance B after a write was
// acknowledged on instance A sees it. A fence is shared by every read waiting for it, so under
// load it costs one trivial statement per batch instead of one query per read; a fence that
// fails or takes over 500 ms sends the read to the database.
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
