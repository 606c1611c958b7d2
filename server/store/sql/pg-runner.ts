// Runs operations (op.ts) on a PostgreSQL pool. Outside a transaction each statement takes any pooled
// connection; a transaction holds one from BEGIN to COMMIT. A lost database surfaces as
// DatabaseUnavailable (pool.ts); a connection that failed mid-way is destroyed, not reused.
// Outside transactions, `getCached` reads are answered from the read cache (pg/read-cache.ts) while it
// is live. Any statement but a SELECT drops the cached reads of its tables once committed (at once, or
// at its transaction's COMMIT), before the result is handed back: read-your-writes on this instance.
import type pg from 'pg';
import { sqlFor } from './dialect.ts';
import { bindOps, type AsyncOps, type Op, type OpTable, type Param, type Step } from './op.ts';
import { mapDatabaseError, releaseClient } from '../pg/pool.ts';
import { CHANNELS } from './channels.ts';
import type { PgReadCache } from '../pg/read-cache.ts';

const BUMP_TOKENS = `UPDATE token_version SET version = version + 1 RETURNING pg_notify('${CHANNELS.tokens}', version::text)`;

/** Distinct statement texts prepared by name; later ones run unnamed. */
const NAMED_MAX = 500;
/** Text -> name, shared by every runner of the process (joined ones too): a name means one text anywhere. */
const PREPARED = new Map<string, string>();

/** One operation's run: the connection of its transaction, if one is open. */
interface Run {
  client: pg.PoolClient | null;
  depth: number;
  broken: unknown;
  tokens: boolean;
  /** Tables written in the open transaction, dropped from the read cache at its commit. */
  written: Set<string>;
}

export class PgRunner {
  private readonly text = sqlFor('postgres');
  readonly pool: pg.Pool;
  private readonly onTokens: () => void;
  /** A connection inside a transaction the caller opened: every operation joins it. */
  private readonly joined: pg.PoolClient | null;
  /** The process's cache of getCached reads, if any (shared by its runners). */
  readonly reads: PgReadCache | null;
  /** Joined: the tables written in the caller's transaction, for committed() at its COMMIT. */
  private readonly pending = new Set<string>();

  constructor(pool: pg.Pool, onTokens: () => void = () => {}, joined: pg.PoolClient | null = null, reads: PgReadCache | null = null) {
    this.pool = pool;
    this.onTokens = onTokens;
    this.joined = joined;
    this.reads = reads;
  }

  /** Joined: the caller's transaction has ended (committed, or maybe): drops the reads of what it wrote. */
  committed(): void {
    this.invalidate(this.pending);
  }

  private invalidate(tables: Set<string>): void {
    if (this.reads) for (const t of tables) this.reads.cache.invalidate(t);
    tables.clear();
  }

  /** A statement ran: its tables are dropped now, or at the commit of the transaction it is in. */
  private wrote(state: Run, sql: string): void {
    // Not following a listener (--read-cache off): nothing is cached, and follow() starts empty.
    if (!this.reads?.following) return;
    if (!state.client) return this.reads.cache.ran(sql);
    const into = this.joined ? this.pending : state.written;
    for (const t of this.reads.cache.written(sql)) into.add(t);
  }

  async run<T>(op: Op<T>): Promise<T> {
    const state: Run = { client: this.joined, depth: this.joined ? 1 : 0, broken: undefined, tokens: false, written: new Set() };
    try {
      let r = op.next();
      while (!r.done) {
        r = await this.step(r.value, state).then(
          (out) => op.next(out),
          (err: unknown) => {
            state.broken = err;
            return op.throw(err);
          },
        );
      }
      if (state.tokens) this.onTokens();
      return r.value;
    } finally {
      // Only reached with a connection still held when the operation itself threw mid-transaction.
      if (state.client !== this.joined) await this.rollback(state);
    }
  }

  private query(state: Pick<Run, 'client'>, sql: string, params: unknown[]): Promise<pg.QueryResult> {
    const name = params.length ? this.nameOf(sql) : undefined;
    const target = state.client ?? this.pool;
    return (name ? target.query({ name, text: sql, values: params }) : target.query(sql, params)).catch(mapDatabaseError);
  }

  /** Each connection parses a named text once, then only binds; none past NAMED_MAX (long IN lists stay unnamed). */
  private nameOf(sql: string): string | undefined {
    let name = PREPARED.get(sql);
    if (name === undefined && PREPARED.size < NAMED_MAX) {
      name = `vad_${PREPARED.size}`;
      PREPARED.set(sql, name);
    }
    return name;
  }

  /** A getCached read outside a transaction: the cached row, or the database's, kept unless invalidated meanwhile. */
  private async cachedGet(sql: string, params: Param[], reads: PgReadCache): Promise<unknown> {
    // A hit counts only after a fence: what another instance committed before now has dropped it.
    if (reads.cache.has(sql, params) && (await reads.fence())) {
      const hit = reads.cache.lookup(sql, params);
      if (hit !== null) return hit;
    }
    const since = reads.cache.since();
    const row = (await this.query({ client: null }, this.text(sql), params)).rows[0] as object | undefined;
    if (reads.live) reads.cache.store(sql, params, row, since);
    return row;
  }

  private release(state: Run): void {
    if (state.client) releaseClient(state.client, state.broken);
    state.client = null;
  }

  private async rollback(state: Run): Promise<void> {
    await state.client?.query('ROLLBACK').catch(() => {});
    this.release(state);
  }

  private async step(s: Step, state: Run): Promise<unknown> {
    if (s.k === 'get' && s.cached && !state.client && this.reads?.live) return this.cachedGet(s.sql, s.params, this.reads);
    if (s.k === 'all' || s.k === 'get' || s.k === 'run') {
      let res: pg.QueryResult;
      try {
        res = await this.query(state, this.text(s.sql, s.notify), s.params);
      } finally {
        // Even a failed statement may have committed (a connection lost after the commit).
        this.wrote(state, s.sql);
      }
      return s.k === 'all' ? res.rows : s.k === 'get' ? res.rows[0] : (res.rowCount ?? 0);
    }
    switch (s.k) {
      case 'begin':
        if (state.depth++ === 0) {
          state.client = await this.pool.connect().catch((err: unknown) => {
            state.depth = 0;
            return mapDatabaseError(err);
          });
          await this.query(state, 'BEGIN', []);
        }
        return undefined;
      case 'commit':
        if (--state.depth === 0) {
          try {
            await this.query(state, 'COMMIT', []);
          } finally {
            this.invalidate(state.written);
          }
          this.release(state);
        }
        return undefined;
      case 'rollback':
        if (--state.depth === 0) await this.rollback(state);
        return undefined;
      case 'lock':
        await this.query(state, 'SELECT pg_advisory_xact_lock(hashtext($1))', [s.key]);
        return undefined;
      case 'dialect':
        return 'postgres';
      case 'tokens':
        await this.query(state, BUMP_TOKENS, []);
        state.tokens = true;
        return undefined;
    }
  }
}

export function bindAsync<T extends OpTable>(table: T, runner: PgRunner): AsyncOps<T> {
  return bindOps(table, (op) => runner.run(op)) as unknown as AsyncOps<T>;
}
