// One storage operation, written once for both databases: a generator that yields the statements
// it needs and gets each result back, so its rule (a claim, a grant, a report applied once) is one
// piece of code. A runner executes it: synchronously on node:sqlite (sqlite-runner.ts: the data
// plane's hot reads never wait) or over a PostgreSQL pool (pg-runner.ts). SQL uses `?` and the subset
// both dialects accept (dialect.ts translates). What differs in kind is a step of its own: a lock
// (PostgreSQL advisory lock; SQLite's single writer already orders transactions), a change notice
// (NOTIFY, delivered on commit), and the dialect, for the rare operation that must branch.

export type Dialect = 'sqlite' | 'postgres';
type Scalar = string | number | boolean | null | bigint;
/** A statement's parameter; a list only on PostgreSQL (an array, as `unnest()` reads it). */
export type Param = Scalar | readonly Scalar[];

export type Step =
  | { k: 'all' | 'get' | 'run'; sql: string; params: Param[]; notify?: Notice; cached?: true }
  | { k: 'begin' | 'commit' | 'rollback' }
  | { k: 'lock'; key: string }
  | { k: 'dialect' }
  | { k: 'tokens' };

/** A change notice: PostgreSQL appends `RETURNING pg_notify(channel, expr)` to the statement. */
export interface Notice {
  channel: string;
  /** An SQL expression over the changed row (for example `id`, or `customer_id || ':' || scope`). */
  expr: string;
}

export type Op<T> = Generator<Step, T, unknown>;

export function* all<T>(sql: string, ...params: Param[]): Op<T[]> {
  return (yield { k: 'all', sql, params }) as T[];
}

export function* get<T>(sql: string, ...params: Param[]): Op<T | undefined> {
  return (yield { k: 'get', sql, params }) as T | undefined;
}

/** A read of rarely changing rows (limits, a client's record): runners may answer it from sql/read-cache.ts. */
export function* getCached<T>(sql: string, ...params: Param[]): Op<T | undefined> {
  return (yield { k: 'get', sql, params, cached: true }) as T | undefined;
}

export function* allAs<R, T>(map: (r: R) => T, sql: string, ...params: Param[]): Op<T[]> {
  return (yield* all<R>(sql, ...params)).map(map);
}

export function* getAs<R, T>(map: (r: R) => T, sql: string, ...params: Param[]): Op<T | undefined> {
  const r = yield* get<R>(sql, ...params);
  return r === undefined ? undefined : map(r);
}

/** The first column of the first row (a count, an id, a version): one SQL text, or each database's own. */
export function* scalar<T = number>(sql: string | Record<Dialect, string>, ...params: Param[]): Op<T> {
  const r = yield* get<Record<string, T>>(typeof sql === 'string' ? sql : sql[yield* dialect()], ...params);
  return Object.values(r!)[0];
}

/** Runs a statement; returns how many rows it changed. */
export function* run(sql: string, ...params: Param[]): Op<number> {
  return (yield { k: 'run', sql, params }) as number;
}

/** Runs a statement that announces its change (PostgreSQL: one NOTIFY per changed row, on commit). */
export function* runNotifying(notice: Notice, sql: string, ...params: Param[]): Op<number> {
  return (yield { k: 'run', sql, params, notify: notice }) as number;
}

export function* changedAny(statement: Op<number>): Op<boolean> {
  return (yield* statement) > 0;
}

/** Serialises transactions on `key` (PostgreSQL advisory lock; nothing to do on SQLite). */
export function* lock(key: string): Op<void> {
  yield { k: 'lock', key };
}

export function* dialect(): Op<Dialect> {
  return (yield { k: 'dialect' }) as Dialect;
}

/** Tokens were created or revoked: the token caches of every instance look again. */
export function* tokensChanged(): Op<void> {
  yield { k: 'tokens' };
}

/** One transaction: committed before the result returns, rolled back on a throw; nested, joins the outer. */
export function tx<A extends unknown[], T>(body: (...args: A) => Op<T>): (...args: A) => Op<T> {
  return function* (...args: A): Op<T> {
    yield { k: 'begin' };
    let out: T;
    try {
      out = yield* body(...args);
    } catch (err) {
      yield { k: 'rollback' };
      throw err;
    }
    yield { k: 'commit' };
    return out;
  };
}

/** `?, ?, ?` for a list of n values (IN lists). */
export const marks = (n: number): string => Array.from({ length: n }, () => '?').join(', ');

/** The WHERE clause of a filtered read, built term by term, with its values in order. */
export class Where {
  private readonly terms: string[] = [];
  readonly args: Param[] = [];

  /** Adds `term` (one `?`) with its value; nothing when the value is undefined (a filter not set). */
  and(term: string, value: Param | undefined): this {
    if (value === undefined) return this;
    this.terms.push(term);
    this.args.push(value);
    return this;
  }

  equal<F extends object>(filter: F, cols: readonly (keyof F & string)[]): this {
    for (const c of cols) this.and(`${c} = ?`, filter[c] as Param | undefined);
    return this;
  }

  /**
   * `col IN (...)` (an empty list matches nothing); nothing when the list is undefined. The list is
   * padded to a power of two by repeating its last value (the same match), so lists of any length
   * make a few statement texts, not one each, in the statement caches of both runners.
   */
  in(col: string, list: readonly Param[] | undefined): this {
    if (list === undefined) return this;
    const size = list.length && 2 ** Math.ceil(Math.log2(list.length));
    this.terms.push(size ? `${col} IN (${marks(size)})` : 'FALSE');
    this.args.push(...list, ...Array.from({ length: size - list.length }, () => list.at(-1)!));
    return this;
  }

  get where(): string {
    return this.terms.join(' AND ');
  }
}

/** `col = ?` for each of `cols` that `patch` sets (undefined: unchanged), with the values in order. */
export function assignments<P extends object>(patch: P, cols: readonly (keyof P & string)[]): { sets: string[]; args: Param[] } {
  const given = cols.filter((c) => patch[c] !== undefined);
  return { sets: given.map((c) => `${c} = ?`), args: given.map((c) => patch[c] as Param) };
}

/** A boolean column (SQLite stores 0/1). Numbers need no conversion: both runners return them as numbers. */
export const bool = (v: unknown): boolean => v === true || v === 1 || v === 1n;

/** A table of operations: every repository exports one (server/store/repos/). */
export type OpTable = Record<string, (...args: never[]) => Op<unknown>>;

type Result<F> = F extends (...a: never[]) => Op<infer R> ? R : never;

/** The operations, run synchronously (SQLite). */
export type SyncOps<T extends OpTable> = { [K in keyof T]: (...a: Parameters<T[K]>) => Result<T[K]> };

/** The operations, run asynchronously (PostgreSQL, or SQLite behind the async seam). */
export type AsyncOps<T extends OpTable> = { [K in keyof T]: (...a: Parameters<T[K]>) => Promise<Result<T[K]>> };

/** Every operation of `table` as a function that hands the operation to `exec` (a runner's run). */
export function bindOps<T extends OpTable, R>(table: T, exec: (op: Op<unknown>) => R): Record<keyof T, (...args: never[]) => R> {
  const bound = Object.entries(table).map(([name, make]) => [name, (...args: never[]) => exec(make(...args))]);
  return Object.fromEntries(bound) as Record<keyof T, (...args: never[]) => R>;
}
