// The audit trail: every change made through the API (sessions created, paused,
// resumed; limits changed or deleted; subscriptions managed) and through the command line
// (tokens created or revoked) is recorded with who made it (the token's id and role, never the
// token; `cli` for the command line), what (action and target) and the values before and after.
// GET /v2/audit reads it (server/routes/audit.ts); the session timeline in the UI shows it.
//
// A record is written right after the change it describes was committed. Writing it never fails
// the request that made the change: a failure is logged (the change stands). The one exception is
// a session's creation, written with its record in one transaction (auditEntry; both or neither). Entries older than
// the retention (default 365 days) are pruned hourly, in batches that leave the event loop free.
import type { Logger } from '../domain.ts';
import type { ControlStore } from '../store/control.ts';
import type { AuditInsert } from '../store/store.ts';
import { isoNow } from '../time.ts';

export const AUDIT_RETENTION_DAYS = 365;
const PRUNE_EVERY_MS = 3_600_000;
const PRUNE_BATCH = 5_000;

/** Who made a change: an API caller, the command line, or the server itself (a webhook disabled after failing). */
export type AuditActor = { tokenId: string; role: 'owner' | 'agent' } | { role: 'cli' } | { role: 'server' };

/** The actor of an authenticated API request (callerOf(request)). */
export function apiActor(caller: { tokenId: string; role: 'owner' | 'agent' }): AuditActor {
  return { tokenId: caller.tokenId, role: caller.role };
}

/** The row recording a change (for an operation that writes it in the change's own transaction). */
export function auditEntry(customerId: string, actor: AuditActor, change: AuditChange): AuditInsert {
  return {
    customer_id: customerId,
    created_at: isoNow(),
    actor_token_id: 'tokenId' in actor ? actor.tokenId : null,
    actor_role: actor.role,
    action: change.action,
    target_type: change.target.type,
    target_id: change.target.id,
    session_id: change.sessionId ?? null,
    client_id: change.clientId ?? null,
    before: change.before ?? null,
    after: change.after ?? null,
  };
}

export interface AuditChange {
  action: string;
  target: { type: string; id: string };
  sessionId?: string;
  clientId?: string;
  before?: unknown;
  after?: unknown;
}

export class AuditTrail {
  private readonly data: Pick<ControlStore, 'recordAudit' | 'pruneAuditBatch'>;
  private readonly log: Logger;
  private readonly retentionMs: number;
  private readonly timer: NodeJS.Timeout;
  private pruning = false;

  constructor(data: Pick<ControlStore, 'recordAudit' | 'pruneAuditBatch'>, log: Logger, retentionDays = AUDIT_RETENTION_DAYS) {
    this.data = data;
    this.log = log;
    this.retentionMs = retentionDays * 86_400_000;
    this.timer = setInterval(() => void this.prune(), PRUNE_EVERY_MS);
    this.timer.unref();
  }

  /** Records one change of `customerId`'s data; resolves once stored (or logged as failed). */
  async record(customerId: string, actor: AuditActor, change: AuditChange): Promise<void> {
    const entry = auditEntry(customerId, actor, change);
    try {
      await this.data.recordAudit(entry);
    } catch (err) {
      this.log.error({ action: change.action, err: String(err) }, 'recording an audit entry failed (the change itself stands)');
    }
  }

  /** Deletes entries past the retention, PRUNE_BATCH at a time. */
  async prune(): Promise<number> {
    if (this.pruning) return 0;
    this.pruning = true;
    let total = 0;
    try {
      const before = new Date(Date.now() - this.retentionMs).toISOString();
      for (let i = 0; i < 1000; i++) {
        const n = await this.data.pruneAuditBatch(before, PRUNE_BATCH);
        total += n;
        if (n < PRUNE_BATCH) break;
        await new Promise((r) => setImmediate(r));
      }
    } catch (err) {
      this.log.warn({ err: String(err) }, 'pruning the audit trail failed; retrying in an hour');
    } finally {
      this.pruning = false;
    }
    return total;
  }

  close(): void {
    clearInterval(this.timer);
  }
}
