// Rows a repository test needs from other aggregates (customers, sessions), arranged with plain
// INSERTs that run on both databases (test/helpers/dialects.ts).
import { randomUUID } from 'node:crypto';
import type { DialectDb } from './dialects.ts';

/** A customer row; returns its id. */
export async function addCustomer(db: DialectDb, name: string): Promise<string> {
  const id = randomUUID();
  await db.sql('INSERT INTO customers (id, name, created_at) VALUES (?, ?, ?)', id, name, '2026-01-01T00:00:00.000Z');
  return id;
}

export interface SessionRowOpts {
  zone?: string;
  status?: string;
  up?: number;
  down?: number;
}

/** A session row of a customer's client, with its lifetime totals; returns its id. */
export async function addSession(db: DialectDb, customerId: string, clientId: string, o: SessionRowOpts = {}): Promise<string> {
  const id = randomUUID();
  await db.sql(
    `INSERT INTO sessions (id, customer_id, client_id, zone, connection_type, reusable, status, uploaded_bytes, downloaded_bytes, created_at)
     VALUES (?, ?, ?, ?, 'vless', ?, ?, ?, ?, ?)`,
    id, customerId, clientId, o.zone ?? 'de-fra', true, o.status ?? 'active', o.up ?? 0, o.down ?? 0, '2026-01-01T00:00:00.000Z',
  );
  return id;
}
