// SQLite's cache of rarely written rows: the results of the reads an operation marks `cached`
// (op.ts getCached: a customer's limits, a client's record), kept until a statement of this
// process writes one of the tables they read, or another process commits anything (SQLite's
// data_version, checked on every cached read). Inside a transaction nothing is cached or
// answered from it. A hit costs a Map look-up and a copy of the row instead of a statement.
import type { Param } from './op.ts';

/** More entries than this start the cache afresh (many customers, each with a few rows). */
const MAX_ENTRIES = 5000;

/** The tables a statement writes: its target, or '*' when it is not a plain INSERT/UPDATE/DELETE. */
function writtenTables(sql: string): string[] {
  const text = sql.trimStart();
  if (/^(SELECT|PRAGMA|BEGIN|COMMIT|ROLLBACK)\b/i.test(text)) return [];
  const m = /^(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE|DELETE\s+FROM)\s+(\w+)/i.exec(text);
  return m ? [m[1].toLowerCase()] : ['*'];
}

/** The tables a cached read reads (FROM and JOIN). */
function readTables(sql: string): string[] {
  return [...sql.matchAll(/\b(?:FROM|JOIN)\s+(\w+)/gi)].map((m) => m[1].toLowerCase());
}

export class ReadCache {
  /** By statement text, then by parameters: the text (the same string every call) hashes once. */
  private readonly entries = new Map<string, Map<string, object | undefined>>();
  private size = 0;
  /** Tables some cached entry read: a write to one of them drops the cache. */
  private readonly watched = new Set<string>();
  private readonly writes = new Map<string, string[]>();
  private readonly dataVersion: () => number;
  private version = -1;

  /** `dataVersion`: SQLite's PRAGMA data_version (changes when another connection commits). */
  constructor(dataVersion: () => number) {
    this.dataVersion = dataVersion;
  }

  private key(params: Param[]): string {
    let k = '';
    for (const p of params) k += `\u0000${typeof p}:${String(p)}`;
    return k;
  }

  /** The cached row (a copy), `null` when not cached. */
  lookup(sql: string, params: Param[]): object | undefined | null {
    const version = this.dataVersion();
    if (version !== this.version) {
      this.version = version;
      this.clear();
      return null;
    }
    const rows = this.entries.get(sql);
    if (!rows) return null;
    const k = this.key(params);
    if (!rows.has(k)) return null;
    const row = rows.get(k);
    return row && { ...row };
  }

  store(sql: string, params: Param[], row: object | undefined): void {
    if (this.size >= MAX_ENTRIES) this.clear();
    for (const t of readTables(sql)) this.watched.add(t);
    let rows = this.entries.get(sql);
    if (!rows) this.entries.set(sql, (rows = new Map()));
    const k = this.key(params);
    if (!rows.has(k)) this.size++;
    rows.set(k, row && { ...row });
  }

  /** A statement of this process ran: drops the cache when it may have written a watched table. */
  ran(sql: string): void {
    if (this.size === 0) return;
    let tables = this.writes.get(sql);
    if (!tables) {
      tables = writtenTables(sql);
      if (this.writes.size >= MAX_ENTRIES) this.writes.clear();
      this.writes.set(sql, tables);
    }
    for (const t of tables) {
      if (t === '*' || this.watched.has(t)) {
        this.clear();
        return;
      }
    }
  }

  clear(): void {
    this.entries.clear();
    this.size = 0;
    this.watched.clear();
  }
}
