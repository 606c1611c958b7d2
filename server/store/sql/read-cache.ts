// The cache of rarely written rows, one class for both databases: the results of `cached` reads (op.ts
// getCached: a customer's limits, a client's record, a session's status read), each dropped when a
// table it read may have changed. Nothing is cached or answered inside a transaction (the runners'
// rule). A hit costs a Map look-up and a row copy instead of a statement (a round trip on PostgreSQL).
// Entries are dropped by this process's own writes (SQLite: at each statement; PostgreSQL: `ran` after
// a statement on its own, `written` then `invalidate` at a transaction's COMMIT) and by other writers
// (SQLite's data_version, checked on every lookup, drops everything; PostgreSQL's `vad_reads` notice
// names the table: ../pg/read-cache.ts). A late answer (PostgreSQL) is stored only if no table it reads
// was invalidated meanwhile (`since`/`store`); else it would overwrite that invalidation with an older row.
import type { Param } from './op.ts';

/** More entries than this start the cache afresh (many customers, each with a few rows). */
const MAX_ENTRIES = 5000;

/**
 * The tables a statement writes: its target, or every INSERT/UPDATE/DELETE target of a WITH (a word after
 * ON CONFLICT DO UPDATE or FOR UPDATE may be named too, harmlessly); '*' for anything else (DDL, unknown).
 */
export function writtenTables(sql: string): string[] {
  const text = sql.trimStart();
  if (/^(SELECT|PRAGMA|BEGIN|COMMIT|ROLLBACK)\b/i.test(text)) return [];
  if (/^WITH\b/i.test(text)) return [...new Set([...text.matchAll(/\b(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+(\w+)/gi)].map((m) => m[1].toLowerCase()))];
  const m = /^(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE|DELETE\s+FROM)\s+(\w+)/i.exec(text);
  return m ? [m[1].toLowerCase()] : ['*'];
}

/** The tables a cached read reads (FROM and JOIN). */
export function readTables(sql: string): string[] {
  return [...new Set([...sql.matchAll(/\b(?:FROM|JOIN)\s+(\w+)/gi)].map((m) => m[1].toLowerCase()))];
}

/** The rows of one statement text, by parameters, and the tables the text reads. */
interface Entry {
  tables: string[];
  rows: Map<string, object | undefined>;
}

export interface ReadCacheOptions {
  /** SQLite's PRAGMA data_version (changes when another connection commits): a change drops everything. */
  dataVersion?: () => number;
  /** The only tables a read may read to be cached (PostgreSQL: those whose writes are notified). */
  tables?: readonly string[];
  /** Tables whose INSERTs are not notified: a read of one is kept only when it found a row. */
  insertSilent?: readonly string[];
}

export class ReadCache {
  /** By statement text (the same string every call: it hashes once), then by parameters. */
  private readonly entries = new Map<string, Entry>();
  private size = 0;
  private readonly writes = new Map<string, string[]>();
  private readonly reads = new Map<string, string[] | null>();
  private readonly dataVersion: (() => number) | undefined;
  private readonly allowed: ReadonlySet<string> | undefined;
  private readonly insertSilent: ReadonlySet<string>;
  private version = -1;
  /** Reads answered from the cache since it was made (a metric). */
  hits = 0;
  /** Bumped by every invalidation; `bumped` holds its value at each table's last one ('*': all). */
  private generation = 0;
  private readonly bumped = new Map<string, number>();

  constructor(opts: ReadCacheOptions = {}) {
    this.dataVersion = opts.dataVersion;
    this.allowed = opts.tables && new Set(opts.tables);
    this.insertSilent = new Set(opts.insertSilent);
  }

  private key(params: Param[]): string {
    let k = '';
    for (const p of params) k += `\u0000${typeof p}:${String(p)}`;
    return k;
  }

  /** The tables `sql` reads; null when one of them is not allowed (such a read is never cached). */
  private tablesOf(sql: string): string[] | null {
    let tables = this.reads.get(sql);
    if (tables === undefined) {
      const found = readTables(sql);
      tables = this.allowed && !found.every((t) => this.allowed!.has(t)) ? null : found;
      if (this.reads.size >= MAX_ENTRIES) this.reads.clear();
      this.reads.set(sql, tables);
    }
    return tables;
  }

  cacheable(sql: string): boolean {
    return this.tablesOf(sql) !== null;
  }

  /** The cached row (a copy), `null` when not cached. */
  lookup(sql: string, params: Param[]): object | undefined | null {
    if (this.dataVersion) {
      const version = this.dataVersion();
      if (version !== this.version) {
        this.version = version;
        this.clear();
        return null;
      }
    }
    const rows = this.entries.get(sql)?.rows;
    if (!rows) return null;
    const k = this.key(params);
    if (!rows.has(k)) return null;
    const row = rows.get(k);
    this.hits++;
    return row && { ...row };
  }

  /** Whether a row is kept for `sql` with `params` (no copy: PostgreSQL's fence comes before the lookup). */
  has(sql: string, params: Param[]): boolean {
    return this.entries.get(sql)?.rows.has(this.key(params)) ?? false;
  }

  /** The generation to give `store` for a read sent now. */
  since(): number {
    return this.generation;
  }

  /** Keeps `row` unless a table it reads was invalidated after `since` (the generation when it was read). */
  store(sql: string, params: Param[], row: object | undefined, since = this.generation): void {
    const tables = this.tablesOf(sql);
    if (!tables) return;
    if (row === undefined && tables.some((t) => this.insertSilent.has(t))) return;
    if ((this.bumped.get('*') ?? -1) > since) return;
    for (const t of tables) if ((this.bumped.get(t) ?? -1) > since) return;
    if (this.size >= MAX_ENTRIES) this.clearEntries();
    let entry = this.entries.get(sql);
    if (!entry) this.entries.set(sql, (entry = { tables, rows: new Map() }));
    const k = this.key(params);
    if (!entry.rows.has(k)) this.size++;
    entry.rows.set(k, row && { ...row });
  }

  /** A statement of this process ran (committed, on PostgreSQL): drops the reads of what it may have written. */
  ran(sql: string): void {
    for (const t of this.written(sql)) this.invalidate(t);
  }

  /** The tables `sql` may write ('*': any), remembered by text. */
  written(sql: string): string[] {
    let tables = this.writes.get(sql);
    if (!tables) {
      tables = writtenTables(sql);
      if (this.writes.size >= MAX_ENTRIES) this.writes.clear();
      this.writes.set(sql, tables);
    }
    return tables;
  }

  /** `table` changed ('*' or no table: anything may have): drops every read of it. */
  invalidate(table = '*'): void {
    this.bumped.set(table, ++this.generation);
    if (this.size === 0) return;
    if (table === '*') return this.clearEntries();
    for (const [sql, entry] of this.entries) {
      if (!entry.tables.includes(table)) continue;
      this.size -= entry.rows.size;
      this.entries.delete(sql);
    }
  }

  /** Drops everything, including the answers of reads still on their way. */
  clear(): void {
    this.invalidate('*');
  }

  private clearEntries(): void {
    this.entries.clear();
    this.size = 0;
  }

  get texts(): string[] {
    return [...this.entries.keys()];
  }

  /** How many rows are cached. */
  get count(): number {
    return this.size;
  }
}
