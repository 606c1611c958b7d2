// Claims: before a session's first connection here the node asks the control plane (one claim
// in flight per session, answered by `claimed`). The answer decides central max_sessions and
// freshens the node's view of the session and its customer's limits (read-your-writes); without
// an answer within CLAIM_TIMEOUT_MS, or without the channel, the node decides with its last state.
// The node keeps under what the control plane answers (NODE_LIMITS.claims, which drops what is
// beyond it unanswered): past nine tenths of that rate it decides with its last state at once,
// rather than send a claim that would wait CLAIM_TIMEOUT_MS for nothing (a proxy whose users open
// short connections one after the other asks once per connection).
import type { DataPlane } from '../dataplane/api.ts';
import type { ClientControl, SessionRow } from '../domain.ts';
import type { NodeState } from '../cluster/node-channel.ts';
import { NODE_LIMITS, TokenBucket } from '../cluster/node-limits.ts';
import type { ChannelLink } from './channel-client.ts';
import type { Owners } from './shares.ts';
import type { NodeView } from './view.ts';

/** How long a node waits for the control plane's answer to a claim before deciding alone. */
const CLAIM_TIMEOUT_MS = 2000;

/** The control plane's answer to a claim, as it comes. */
export type ClaimedMessage = { id?: number; ok?: unknown; session?: unknown; row?: SessionRow | null; limits?: NodeState['limits'][string]; client?: ClientControl | null };

export interface ClaimsDeps {
  channel: ChannelLink;
  owners: Owners;
  dataPlane: Pick<DataPlane, 'live'>;
  view: Pick<NodeView, 'refusals' | 'freshen'>;
}

export class NodeClaims {
  private readonly deps: ClaimsDeps;
  private claimSeq = 0;
  /** Claims waiting for their answer, by claim id: each settles with ok, refused (false) or undecided (null). */
  private readonly waiting = new Map<number, (ok: boolean | null) => void>();
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly budget = new TokenBucket(NODE_LIMITS.claims.rate * 0.9, NODE_LIMITS.claims.burst * 0.9);
  /** Claims not sent because the budget was spent (the node decided alone), for tests and diagnostics. */
  unasked = 0;

  constructor(deps: ClaimsDeps) {
    this.deps = deps;
  }

  claim(sessionId: string, row: SessionRow | undefined): Promise<void> {
    const running = this.inFlight.get(sessionId);
    if (running) return running;
    const { channel, view } = this.deps;
    if (!channel.ready) return Promise.resolve(); // decided here, with the last state
    if (!this.budget.take()) {
      this.unasked++;
      return Promise.resolve();
    }
    const id = ++this.claimSeq;
    const active = this.activeOf(row);
    const p = new Promise<void>((resolve) => {
      const timer = setTimeout(() => done(null), CLAIM_TIMEOUT_MS);
      const done = (ok: boolean | null) => {
        clearTimeout(timer);
        this.waiting.delete(id);
        this.inFlight.delete(sessionId);
        if (ok === false) view.refusals.set(sessionId, 'max_sessions');
        resolve();
      };
      this.waiting.set(id, done);
    });
    this.inFlight.set(sessionId, p);
    channel.send({ type: 'claim', id, session: sessionId, active });
    return p;
  }

  /** The `claimed` message: the claim it answers settles (an answer to no claim waiting is ignored). */
  answer(m: ClaimedMessage): void {
    const done = this.waiting.get(m.id ?? -1);
    if (!done) return;
    if (typeof m.session === 'string') {
      this.deps.view.freshen(m.session, m.row, m.limits, m.client);
      if (m.row) this.deps.owners.set(m.row.id, { customer: m.row.customer_id, client: m.row.client_id });
    }
    // Not placed here (row null): refused as unknown, no max_sessions refusal to keep.
    done(m.row === null ? null : m.ok === true);
  }

  /** Every claim still waiting settles undecided (the node stops). */
  settleAll(): void {
    for (const done of [...this.waiting.values()]) done(null);
  }

  /** This node's active sessions of the client (of every client when the session is not known yet). */
  private activeOf(row: SessionRow | undefined): string[] {
    const { owners, dataPlane } = this.deps;
    const active: string[] = [];
    for (const [sid, o] of owners) if ((!row || (o.customer === row.customer_id && o.client === row.client_id)) && dataPlane.live(sid)?.status === 'active') active.push(sid);
    return active;
  }
}
