// Runs operations (op.ts) on node:sqlite, synchronously; each statement text is compiled once and
// reused. A transaction is BEGIN IMMEDIATE (one writer at a time, across processes too); inside a
// transaction the caller opened, an operation joins it.
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import { sqlFor } from './dialect.ts';
import { ReadCache } from './read-cache.ts';
import { bindOps, type AsyncOps, type Op, type OpTable, type Param, type Step, type SyncOps } from './op.ts';
import { unwritable } from './unwritable.ts';

/** More distinct statement texts than this (IN lists of many lengths) start the cache afresh. */
const CACHE_MAX = 2000;

// A list (PostgreSQL's arrays) is never given to SQLite: node:sqlite refuses it.
const bind = (p: Param): SQLInputValue => (typeof p === 'boolean' ? (p ? 1 : 0) : (p as SQLInputValue));

/** The parameters as node:sqlite binds them (booleans as 0/1); no copy when there is no boolean. */
const args = (params: Param[]): SQLInputValue[] => (params.some((p) => typeof p === 'boolean') ? params.map(bind) : (params as SQLInputValue[]));

type Row = Record<string, unknown>;
type RowOf = (values: unknown[]) => Row;

/**
 * Rows come from node:sqlite as arrays and become plain objects (as PostgreSQL's are) through one
 * object literal per statement, compiled from its columns: node:sqlite's own row objects (null
 * prototype, built a property at a time, then copied) cost three times as much; a 100-row page
 * took 260 µs that way, 80 µs this way. Column names come from the project's own SQL.
 */
function rowOf(statement: StatementSync): RowOf {
  const names = statement.columns().map((c) => c.name);
  if (names.includes('__proto__')) return (values) => Object.fromEntries(names.map((n, i) => [n, values[i]]));
  return new Function('v', `return {${names.map((n, i) => `${JSON.stringify(n)}: v[${i}]`).join(', ')}};`) as RowOf;
}

/**
 * The read cache's data_version check, read once per event-loop turn (at most 1 ms apart): a request
 * after another process's commit runs in a later turn and sees it, yet a turn's many cached reads
 * share one statement (a check per hit was the largest store cost of a status read).
 */
function turnVersion(read: () => number): () => number {
  let version: number | undefined;
  let at = 0;
  const forget = () => (version = undefined);
  return () => {
    const now = performance.now();
    if (version === undefined || now - at >= 1) {
      if (version === undefined) setImmediate(forget);
      version = read();
      at = now;
    }
    return version;
  };
}

export class SqliteRunner {
  private readonly statements = new Map<string, { statement: StatementSync; row: RowOf }>();
  private readonly text = sqlFor('sqlite');
  private depth = 0;
  private owned = false;
  readonly db: DatabaseSync;
  /** Called when an operation created or revoked a token (the token caches watch it). */
  private readonly onTokens: () => void;
  /** The results of `getCached` reads (sql/read-cache.ts). */
  private readonly cache: ReadCache;

  constructor(db: DatabaseSync, onTokens: () => void = () => {}) {
    this.db = db;
    this.onTokens = onTokens;
    this.cache = new ReadCache({ dataVersion: turnVersion(() => this.first(this.prepared('PRAGMA data_version'), [])!.data_version as number) });
  }

  /** The compiled statement of `sql`, about to run: drops now the cached reads of the tables it writes. */
  private statement(sql: string): { statement: StatementSync; row: RowOf } {
    this.cache.ran(sql);
    return this.prepared(sql);
  }

  private prepared(sql: string): { statement: StatementSync; row: RowOf } {
    let s = this.statements.get(sql);
    if (!s) {
      if (this.statements.size >= CACHE_MAX) this.statements.clear();
      const statement = this.db.prepare(this.text(sql));
      statement.setReturnArrays(true);
      s = { statement, row: rowOf(statement) };
      this.statements.set(sql, s);
    }
    return s;
  }

  /** Any statement outside operations (tests, tools): its rows; a write drops the cached reads first. */
  all(sql: string, ...params: Param[]): Row[] {
    const { statement, row } = this.statement(sql);
    return (statement.all(...args(params)) as unknown as unknown[][]).map(row);
  }

  /** The statement's first row, or undefined. */
  private first(s: { statement: StatementSync; row: RowOf }, params: Param[]): Row | undefined {
    const values = s.statement.get(...args(params)) as unknown[] | undefined;
    return values && s.row(values);
  }

  run<T>(op: Op<T>): T {
    let r = op.next();
    while (!r.done) {
      let out: unknown;
      try {
        out = this.step(r.value);
      } catch (err) {
        r = op.throw(unwritable(err));
        continue;
      }
      r = op.next(out);
    }
    return r.value;
  }

  /** Ends the transaction; SQLite may have rolled it back itself already (a full disk, an I/O error). */
  private rollback(): void {
    if (this.db.isTransaction) this.db.exec('ROLLBACK');
  }

  private step(s: Step): unknown {
    switch (s.k) {
      case 'all':
        return this.all(s.sql, ...s.params);
      case 'get': {
        if (!s.cached || this.depth > 0 || this.db.isTransaction) return this.first(this.statement(s.sql), s.params);
        const hit = this.cache.lookup(s.sql, s.params);
        if (hit !== null) return hit;
        const row = this.first(this.prepared(s.sql), s.params);
        this.cache.store(s.sql, s.params, row);
        return row;
      }
      case 'run':
        return Number(this.statement(s.sql).statement.run(...args(s.params)).changes);
      case 'begin':
        if (this.depth === 0) {
          this.owned = !this.db.isTransaction;
          if (this.owned) this.db.exec('BEGIN IMMEDIATE');
        }
        this.depth++;
        return undefined;
      case 'commit':
        if (--this.depth === 0 && this.owned) {
          try {
            this.db.exec('COMMIT');
          } catch (err) {
            this.rollback();
            throw err;
          }
        }
        return undefined;
      case 'rollback':
        if (--this.depth === 0 && this.owned) this.rollback();
        return undefined;
      case 'lock':
        return undefined; // BEGIN IMMEDIATE already admits one writer at a time
      case 'dialect':
        return 'sqlite';
      case 'tokens':
        this.onTokens();
        return undefined;
    }
  }
}

export function bindSync<T extends OpTable>(table: T, runner: SqliteRunner): SyncOps<T> {
  return bindOps(table, (op) => runner.run(op)) as unknown as SyncOps<T>;
}

/** The async seam on SQLite: runs synchronously behind a settled promise (no thread hop); errors reject. */
export function bindSettled<T extends OpTable>(table: T, runner: SqliteRunner): AsyncOps<T> {
  return bindOps(table, (op) => new Promise((resolve) => resolve(runner.run(op)))) as unknown as AsyncOps<T>;
}
