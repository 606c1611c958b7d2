// Pause and resume use cases: one call that pauses (or resumes) a reusable session through the
// session service (stored, cut on this process's data plane, node channels woken), then writes
// the audit trail and queues the webhook.
import type { AuditActor, AuditTrail } from './audit/trail.ts';
import type { WebhookEventKind } from './contract/webhooks.ts';
import type { SessionService } from './sessions.ts';
import type { ControlStore } from './store/control.ts';

export interface PauseDeps {
  data: Pick<ControlStore, 'getSessionOf'>;
  sessions: Pick<SessionService, 'setPaused'>;
  webhooks: { emitQuietly(customerId: string, kind: WebhookEventKind, data: Record<string, unknown>, sessionId?: string): Promise<void> } | null;
  audit: Pick<AuditTrail, 'record'>;
}

export class PauseService {
  private readonly deps: PauseDeps;

  constructor(deps: PauseDeps) {
    this.deps = deps;
  }

  async set(customerId: string, actor: AuditActor, id: string, paused: boolean): Promise<{ session_id: string; paused: boolean }> {
    const { data, sessions, audit, webhooks } = this.deps;
    const action = paused ? 'pause' : 'resume';
    const before = await data.getSessionOf(customerId, id);
    const result = await sessions.setPaused(customerId, id, paused);
    await audit.record(customerId, actor, {
      action: `session.${action}`,
      target: { type: 'session', id },
      sessionId: id,
      clientId: before?.client_id,
      before: { paused: before?.paused ?? null },
      after: { paused: result.paused },
    });
    // Queued once the change is made.
    await webhooks?.emitQuietly(customerId, paused ? 'session_paused' : 'session_resumed', { session_id: result.session_id, paused: result.paused }, result.session_id);
    return result;
  }
}
