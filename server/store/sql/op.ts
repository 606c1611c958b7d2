// One storage operation, written once for both databases. An operation is a generator that
// yields the statements it needs and gets each one's result back; a runner executes them:
// synchronously on node:sqlite (sqlite-runner.ts: the data plane's hot reads never wait) or
// over a PostgreSQL pool (pg-runner.ts). The rule inside an operation (a claim, a grant, a
// report applied once) is therefore one piece of code whatever database carries it.
//
// SQL is written once in the subset both dialects accept, with `?` placeholders; dialect.ts
// turns it into PostgreSQL's `$n` and expands the few fragments that differ ({now}, {ago:N},
// {iso:col}). What truly differs in kind is a step of its own: a lock (PostgreSQL's advisory
// lock; SQLite's single writer already orders transactions), a change notice (PostgreSQL's
// NOTIFY, delivered on commit) and the dialect itself, for the rare operation that must branch.

export type Dialect = 'sqlite' | 'postgres';
export type Param = string | number | boolean | null | bigint;

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

/** What an operation is: a generator of steps returning T. */
export type Op<T> = Generator<Step, T, unknown>;

/** Rows of a query. */
export function* all<T>(sql: string, ...params: Param[]): Op<T[]> {
  return (yield { k: 'all', sql, params }) as T[];
}

/** The first row of a query, if any. */
export function* get<T>(sql: string, ...params: Param[]): Op<T | undefined> {
  return (yield { k: 'get', sql, params }) as T | undefined;
}

/**
 * The first row of a read of rows that rarely change (limits, a client's record): a runner may
 * answer it from a cache it drops whenever those tables change (SQLite: sql/read-cache.ts).
 */
export function* getCached<T>(sql: string, ...params: Param[]): Op<T | undefined> {
  return (yield { k: 'get', sql, params, cached: true }) as T | undefined;
}

/** Rows of a query, each as `map` makes it. */
export function* allAs<R, T>(map: (r: R) => T, sql: string, ...params: Param[]): Op<T[]> {
  return (yield* all<R>(sql, ...params)).map(map);
}

/** The first row of a query, if any, as `map` makes it. */
export function* getAs<R, T>(map: (r: R) => T, sql: string, ...params: Param[]): Op<T | undefined> {
  const r = yield* get<R>(sql, ...params);
  return r === undefined ? undefined : map(r);
}

/** The first column of a query's first row (a count, an id, a version): one SQL text, or each database's own. */
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

/** Whether a statement (run, runNotifying) changed any row. */
export function* changedAny(statement: Op<number>): Op<boolean> {
  return (yield* statement) > 0;
}

/** Serialises transactions on `key` (PostgreSQL advisory lock; nothing to do on SQLite). */
export function* lock(key: string): Op<void> {
  yield { k: 'lock', key };
}

/** The database the operation runs on, for what truly differs in kind. */
export function* dialect(): Op<Dialect> {
  return (yield { k: 'dialect' }) as Dialect;
}

/** Tokens were created or revoked: the token caches of every instance look again. */
export function* tokensChanged(): Op<void> {
  yield { k: 'tokens' };
}

/**
 * Makes an operation one transaction: committed before its result is returned, rolled back
 * when it throws. Inside another transaction it joins the outer one.
 */
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

  /** `col = ?` for each of `cols` that `filter` sets. */
  equal<F extends object>(filter: F, cols: readonly (keyof F & string)[]): this {
    for (const c of cols) this.and(`${c} = ?`, filter[c] as Param | undefined);
    return this;
  }

  /** `col IN (...)` (an empty list matches nothing); nothing when the list is undefined. */
  in(col: string, list: readonly Param[] | undefined): this {
    if (list === undefined) return this;
    this.terms.push(list.length ? `${col} IN (${marks(list.length)})` : 'FALSE');
    this.args.push(...list);
    return this;
  }

  /** The terms joined with AND. */
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
