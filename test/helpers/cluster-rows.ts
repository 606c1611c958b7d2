// Rows the cluster repositories' tests arrange and check with plain SQL, the same on both
// databases (test/helpers/dialects.ts): customers, sessions, a node's last contact, events.
import { randomUUID } from 'node:crypto';
import { tokenOps } from '../../server/store/repos/tokens.ts';
import type { DialectDb } from './dialects.ts';

export const MiB = 1 << 20;

export async function customer(db: DialectDb, name = 'acme'): Promise<string> {
  return (await db.run(tokenOps.ensureCustomer(name))).id;
}

export interface SessionSpec {
  client_id?: string;
  zone?: string;
  reusable?: boolean;
  status?: 'created' | 'active' | 'idle' | 'ended';
  claimed_at?: number | null;
  uploaded_bytes?: number;
  downloaded_bytes?: number;
  duration?: number;
}

/** Inserts a session (in creation order: its seq follows the previous one's) and returns its id. */
export async function session(db: DialectDb, customerId: string, spec: SessionSpec = {}): Promise<string> {
  const id = randomUUID();
  await db.sql(
    `INSERT INTO sessions (id, customer_id, client_id, zone, connection_type, reusable, created_at, status, claimed_at, uploaded_bytes, downloaded_bytes, duration)
     VALUES (?, ?, ?, ?, 'vless', ?, ?, ?, ?, ?, ?, ?)`,
    id,
    customerId,
    spec.client_id ?? 'alice',
    spec.zone ?? 'de-fra',
    spec.reusable ?? true,
    '2026-11-22T10:00:00.000Z',
    spec.status ?? 'created',
    spec.claimed_at ?? null,
    spec.uploaded_bytes ?? 0,
    spec.downloaded_bytes ?? 0,
    spec.duration ?? 0,
  );
  return id;
}

export async function setStatus(db: DialectDb, id: string, status: string): Promise<void> {
  await db.sql('UPDATE sessions SET status = ? WHERE id = ?', status, id);
}

/** The session's fields the tests compare. */
export async function sessionState(db: DialectDb, id: string): Promise<{ status: string; up: number; down: number; duration: number; connections: number; claimed: boolean }> {
  const [r] = await db.sql<Record<string, unknown>>('SELECT status, uploaded_bytes, downloaded_bytes, duration, connections, claimed_at FROM sessions WHERE id = ?', id);
  return {
    status: String(r.status),
    up: Number(r.uploaded_bytes),
    down: Number(r.downloaded_bytes),
    duration: Number(r.duration),
    connections: Number(r.connections),
    claimed: r.claimed_at !== null,
  };
}

/** Sets a node's last contact `seconds` ago (an ISO time: text on SQLite, a timestamptz on PostgreSQL). */
export async function contactAgo(db: DialectDb, nodeId: string, seconds: number): Promise<void> {
  await db.sql('UPDATE nodes SET last_contact = ? WHERE id = ?', new Date(Date.now() - seconds * 1000).toISOString(), nodeId);
}

export async function countRows(db: DialectDb, table: 'events' | 'node_grants' | 'session_placements'): Promise<number> {
  return Number((await db.sql<{ n: unknown }>(`SELECT COUNT(*) AS n FROM ${table}`))[0].n);
}

/** The journal's table: SQLite's schema gains it with the one migration list; until then a test makes it. */
export async function ensureJournalSeqs(db: DialectDb): Promise<void> {
  await db.sql('CREATE TABLE IF NOT EXISTS journal_seqs (journal_id TEXT PRIMARY KEY, seq BIGINT NOT NULL)');
}

/** A new event row for a session (what a report or repair stores). */
export function eventRow(customerId: string, sessionId: string, type: 'session_start' | 'session_stats' | 'session_end', n = 0) {
  return { customer_id: customerId, session_id: sessionId, event_type: type, created_at: '2026-11-22T10:00:01.000Z', duration: n, downloaded_bytes: n * 10, uploaded_bytes: n * 100 };
}
