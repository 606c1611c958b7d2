// The two halves of admitting a connection that need no runtime state: the in-memory state of a
// session seen for the first time (from its stored row), and the refusal its limits give a new
// connection (the control plane's answer on a cluster node, else admission.ts's pure check).
import type { DataPlaneDeps } from './api.ts';
import type { SessionRow } from '../domain.ts';
import { type Refusal, refusalByLimits } from './admission.ts';
import { sinceBase } from './entities.ts';
import { type ClientState, type CustomerState, type SessionState, grantSpent, idShort, makeBuckets } from './meters.ts';

/** Open connections per session unless configured (a browser opens a few dozen at most). */
export const DEFAULT_MAX_CONNECTIONS_PER_SESSION = 64;

/** A session's state when its first connection since it was loaded is admitted at `now`. */
export function newSession(row: SessionRow, customer: CustomerState, client: ClientState, now: number, connBurst: number): SessionState {
  return {
    id: row.id,
    short: idShort(row.id),
    zone: row.zone,
    expiresAt: 0,
    reusable: row.reusable,
    customer,
    client,
    status: row.status,
    totals: { up: row.uploaded_bytes, down: row.downloaded_bytes },
    buckets: makeBuckets(customer.limits.session, now),
    durationMs: row.duration * 1000,
    openSince: 0,
    connections: row.connections,
    open: new Set(),
    pending: new Set(),
    capped: false,
    lingerUntil: 0,
    lastClosedAt: 0,
    connTokens: connBurst - 1, // this connection takes one
    connTokensAt: now,
    lastSaved: { up: row.uploaded_bytes, down: row.downloaded_bytes, duration: row.duration, status: row.status, connections: row.connections },
    lastStats: { up: row.uploaded_bytes, down: row.downloaded_bytes },
    lastStatsAt: now,
    lastHeartbeatAt: now,
    capBase: { up: 0, down: 0 },
    capPeriod: -1,
  };
}

/** Why the session's limits refuse one more connection, or undefined when they allow it. */
export function limitRefusal(deps: DataPlaneDeps, session: SessionState, client: ClientState, customer: CustomerState): Refusal | undefined {
  // A cluster node: the control plane's answer to this session's claim (central max_sessions).
  const decided = session.open.size === 0 && session.pending.size === 0 ? deps.store.clusterRefusal?.(session.id) : undefined;
  return (
    decided ??
    refusalByLimits({
      reusable: session.reusable,
      // a connection still dialling holds its place: it may yet be counted
      connections: session.connections + session.pending.size,
      openConnections: session.open.size + session.pending.size,
      activeSessionsOfClient: client.active.size,
      maxOpenConnections: deps.config.maxConnectionsPerSession ?? DEFAULT_MAX_CONNECTIONS_PER_SESSION,
      limits: { global: customer.limits.global, client: client.limits, session: customer.limits.session },
      totals: {
        session: sinceBase(session),
        client: sinceBase(client),
        customer: sinceBase(customer),
      },
      spent: { client: grantSpent(client), customer: grantSpent(customer) },
    })
  );
}
