// Usage thresholds crossed (50, 80 and 100 % of a byte cap in force), one SQL text for both databases.
// The unique KEY lets one INSERT win however many instances or nodes see a crossing and however often
// restarts see it again; the usage_threshold webhook is queued in the winner's transaction (the outbox:
// webhook-deliveries.ts), never without the row and never twice.
import { all, get, marks, run, tx, type Op } from '../sql/op.ts';
import { deliveryOps, type QueuedEvent } from './webhook-deliveries.ts';

export const THRESHOLDS = [50, 80, 100] as const;
export type Threshold = (typeof THRESHOLDS)[number];

/** One crossing: who, which cap, which threshold, in which period (its key), and the figures then. */
export interface ThresholdCrossing {
  customer_id: string;
  scope: 'session' | 'client' | 'global';
  /** The session id, the client id, or the customer id (global). */
  entity_id: string;
  direction: 'download' | 'upload';
  threshold: Threshold;
  /** Names the period the cap counts in and what it counts against (server/quota/thresholds.ts). */
  period_key: string;
  /** The fixed period's start (epoch ms), 0 for lifetime caps and the rolling window: old rows are pruned by it. */
  period_start: number;
  used_bytes: number;
  cap_bytes: number;
  crossed_at: string;
}

/** The webhook queued with a crossing won: the outbox entry and the outbox's bounds. */
export interface QueuedWith {
  event: QueuedEvent;
  now: number;
  maxPending: number;
}

const KEY = 'customer_id, scope, entity_id, direction, threshold, period_key';

/** Records a crossing once; the winner also queues `queued` (webhooks on). Returns whether it won. */
const recordThreshold = tx(function* (c: ThresholdCrossing, queued: QueuedWith | null): Op<boolean> {
  const won = yield* get<{ threshold: number }>(
    `INSERT INTO usage_thresholds (${KEY}, period_start, used_bytes, cap_bytes, crossed_at) VALUES (${marks(10)})
     ON CONFLICT (${KEY}) DO NOTHING RETURNING threshold`,
    c.customer_id, c.scope, c.entity_id, c.direction, c.threshold, c.period_key, c.period_start, c.used_bytes, c.cap_bytes, c.crossed_at,
  );
  if (!won) return false;
  if (queued) yield* deliveryOps.enqueue(queued.event, queued.now, queued.maxPending);
  return true;
});

/** The thresholds recorded for one entity, direction and period key, lowest first. */
function* thresholdsCrossed(customerId: string, scope: ThresholdCrossing['scope'], entityId: string, direction: ThresholdCrossing['direction'], periodKey: string): Op<number[]> {
  const rows = yield* all<{ threshold: number }>(
    'SELECT threshold FROM usage_thresholds WHERE customer_id = ? AND scope = ? AND entity_id = ? AND direction = ? AND period_key = ? ORDER BY threshold',
    customerId, scope, entityId, direction, periodKey,
  );
  return rows.map((r) => r.threshold);
}

/** Deletes the crossings of fixed periods that started before `before` (lifetime and rolling rows stay). */
const pruneThresholds = (before: number) => run('DELETE FROM usage_thresholds WHERE period_start > 0 AND period_start < ?', before);

export const thresholdOps = { recordThreshold, thresholdsCrossed, pruneThresholds };
