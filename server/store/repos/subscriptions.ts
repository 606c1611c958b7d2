// Subscriptions, one SQL text for both databases: one row per (customer, client_id) while on. The URL
// secret is HMAC(server key, random `nonce`); only its SHA-256 is stored (server/subscriptions/secret.ts).
// On PostgreSQL every `serve` instance shares the rows, so a subscription URL works on all of them.
import { isoNow } from '../../time.ts';
import type { AsyncOps } from '../sql/op.ts';
import { allAs, changedAny, get, run, type Op } from '../sql/op.ts';
import { SESSION_COLUMNS, toSessionRow } from './sessions.ts';
import { subscriptionSettingsOps } from './subscription-settings.ts';

export interface SubscriptionRow {
  customer_id: string;
  client_id: string;
  nonce: string;
  secret_hash: string;
  created_at: string;
  rotated_at: string | null;
}

const COLUMNS = 'customer_id, client_id, nonce, secret_hash, created_at, rotated_at';

const getSubscription = (customerId: string, clientId: string) =>
  get<SubscriptionRow>(`SELECT ${COLUMNS} FROM subscriptions WHERE customer_id = ? AND client_id = ?`, customerId, clientId);

const findBySecretHash = (hash: string) => get<SubscriptionRow>(`SELECT ${COLUMNS} FROM subscriptions WHERE secret_hash = ?`, hash);

/** Turns the subscription on, or gives it a new nonce (and so a new secret) when it is on. */
function* upsert(customerId: string, clientId: string, nonce: string, secretHash: string): Op<SubscriptionRow> {
  const now = isoNow();
  return (yield* get<SubscriptionRow>(
    `INSERT INTO subscriptions (customer_id, client_id, nonce, secret_hash, created_at, rotated_at) VALUES (?, ?, ?, ?, ?, NULL)
     ON CONFLICT (customer_id, client_id) DO UPDATE SET nonce = excluded.nonce, secret_hash = excluded.secret_hash, rotated_at = ?
     RETURNING ${COLUMNS}`,
    customerId, clientId, nonce, secretHash, now, now,
  ))!;
}

const deleteSubscription = (customerId: string, clientId: string) =>
  changedAny(run('DELETE FROM subscriptions WHERE customer_id = ? AND client_id = ?', customerId, clientId));

/** Sessions of the client that may still carry traffic as stored: not ended, not paused; newest first. */
const usableSessions = (customerId: string, clientId: string, limit = 200) => allAs(
  toSessionRow,
  `SELECT ${SESSION_COLUMNS} FROM sessions WHERE customer_id = ? AND client_id = ? AND status <> 'ended' AND paused = ? ORDER BY seq DESC LIMIT ?`,
  customerId, clientId, false, limit,
);

/** The rows of subscriptions and, with them, the customer's settings that every feed carries. */
export const subscriptionOps = { get: getSubscription, findBySecretHash, upsert, delete: deleteSubscription, usableSessions, ...subscriptionSettingsOps };

/** What the subscription service needs of a database. */
export type SubscriptionData = AsyncOps<typeof subscriptionOps>;
