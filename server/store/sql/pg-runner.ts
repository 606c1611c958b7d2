// Runs operations (op.ts) on a PostgreSQL pool. Outside a transaction each statement takes any
// pooled connection; a transaction holds one connection from its BEGIN to its COMMIT. A lost
// database surfaces as DatabaseUnavailable (pool.ts), and a connection that failed mid-way is
// destroyed rather than reused.
import type pg from 'pg';
import { sqlFor } from './dialect.ts';
import { bindOps, type AsyncOps, type Op, type OpTable, type Step } from './op.ts';
import { mapDatabaseError, releaseClient } from '../pg/pool.ts';
import { CHANNELS } from './channels.ts';

const BUMP_TOKENS = `UPDATE token_version SET version = version + 1 RETURNING pg_notify('${CHANNELS.tokens}', version::text)`;

/** Distinct statement texts prepared by name; later ones run unnamed. */
const NAMED_MAX = 500;
/**
 * Shared by every runner of the process: a name means one text on whatever pooled connection
 * prepares it (a transaction's runner joined to a connection uses the same names).
 */
const PREPARED = new Map<string, string>();

/** One operation's run: the connection of its transaction, if one is open. */
interface Run {
  client: pg.PoolClient | null;
  depth: number;
  broken: unknown;
  tokens: boolean;
}

export class PgRunner {
  private readonly text = sqlFor('postgres');
  readonly pool: pg.Pool;
  private readonly onTokens: () => void;
  /** A connection inside a transaction the caller opened: every operation joins it. */
  private readonly joined: pg.PoolClient | null;

  constructor(pool: pg.Pool, onTokens: () => void = () => {}, joined: pg.PoolClient | null = null) {
    this.pool = pool;
    this.onTokens = onTokens;
    this.joined = joined;
  }

  async run<T>(op: Op<T>): Promise<T> {
    const state: Run = { client: this.joined, depth: this.joined ? 1 : 0, broken: undefined, tokens: false };
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

  private query(state: Run, sql: string, params: unknown[]): Promise<pg.QueryResult> {
    const name = params.length ? this.nameOf(sql) : undefined;
    const target = state.client ?? this.pool;
    return (name ? target.query({ name, text: sql, values: params }) : target.query(sql, params)).catch(mapDatabaseError);
  }

  /**
   * The name a statement text is prepared under (each connection parses it once, then only binds
   * and executes); none past NAMED_MAX distinct texts (IN lists of many lengths stay unnamed).
   */
  private nameOf(sql: string): string | undefined {
    let name = PREPARED.get(sql);
    if (name === undefined && PREPARED.size < NAMED_MAX) {
      name = `vad_${PREPARED.size}`;
      PREPARED.set(sql, name);
    }
    return name;
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
    if (s.k === 'all' || s.k === 'get' || s.k === 'run') {
      const res = await this.query(state, this.text(s.sql, s.notify), s.params);
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
          await this.query(state, 'COMMIT', []);
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

/** Every operation of `table`, bound to run on `runner`. */
export function bindAsync<T extends OpTable>(table: T, runner: PgRunner): AsyncOps<T> {
  return bindOps(table, (op) => runner.run(op)) as unknown as AsyncOps<T>;
}
