// Byte grants: how a customer's or client's byte caps hold while several data-plane nodes carry its
// traffic. Per node and capped entity, `granted` and `used` are cumulative bytes (used grows in the
// transaction applying each report of the node's channel); the node moves at most `granted - used`
// more. The control plane tops grants up, holding the customer's lock, only from what no node holds:
//
//   available = room − Σ over nodes max(0, granted − used),   room = cap + base − total moved
//
// so all grants together never exceed the cap, whichever instance granted them and however late a
// node learns of another's. A spent grant waits for more; once nothing is available (`final`), it is
// the cap and the node cuts. An idle node gives back all but KEEP_IDLE (releaseRow) so others are not
// kept short; only the node knows it is idle, so it asks, naming its grant's generation. The release
// bumps it and the node ignores shares of the older one (they still count the bytes given back).
// Pure arithmetic; each store runs it inside its own transaction.

export interface GrantRow {
  node_id: string;
  used_up: number;
  used_down: number;
  granted_up: number;
  granted_down: number;
  /** Bumped by each release: a share names the generation it was measured in. */
  gen: number;
}

export type Dir = 'up' | 'down';

export interface GrantRequest {
  /** The entity's byte caps (null: none in that direction). */
  cap: { up: number | null; down: number | null };
  /** What its caps count from in this period (the period's base); null: lifetime caps, or no base recorded yet. */
  base: { up: number; down: number } | null;
  /** The caps renew: without a recorded base the period counts from now. */
  periodic?: boolean;
  /** How much this node should hold unused after a top-up (about its next second of traffic). */
  want: { up: number; down: number };
}

export interface Grant {
  /** Bytes the node may still move past what it has reported (`granted − used`); null: no cap. */
  left: { up: number | null; down: number | null };
  /** Nothing more is available: the node's grant, once spent, is the cap. */
  final: { up: boolean; down: boolean };
  /** The node's used bytes the grant was measured from. */
  used: { up: number; down: number };
  gen: number;
}

/** What an idle node keeps of its grant when it releases the rest (about its next first second). */
export const KEEP_IDLE = 1 << 20;

/** A node's row after it released all but `keep` of what it holds unused; the generation moves on. */
export function releaseRow(row: GrantRow, keep = KEEP_IDLE): GrantRow {
  return {
    ...row,
    granted_up: Math.min(row.granted_up, row.used_up + keep),
    granted_down: Math.min(row.granted_down, row.used_down + keep),
    gen: row.gen + 1,
  };
}

/**
 * Tops up one node's row. `rows` (every node's, of the entity) are read before `total` (moved bytes, all
 * nodes and serve data planes): a report applied between the reads can only make `available` smaller.
 */
export function allocate(rows: GrantRow[], nodeId: string, total: { up: number; down: number }, req: GrantRequest): { row: GrantRow; grant: Grant } {
  const own = rows.find((r) => r.node_id === nodeId) ?? { node_id: nodeId, used_up: 0, used_down: 0, granted_up: 0, granted_down: 0, gen: 0 };
  const row = { ...own };
  const grant: Grant = { left: { up: null, down: null }, final: { up: false, down: false }, used: { up: own.used_up, down: own.used_down }, gen: own.gen };
  for (const dir of ['up', 'down'] as const) {
    const cap = req.cap[dir];
    if (cap === null) continue;
    const [used, granted] = [`used_${dir}`, `granted_${dir}`] as const;
    const counted = req.base ? total[dir] - req.base[dir] : req.periodic ? 0 : total[dir];
    const room = cap - Math.max(0, counted);
    let available = room - rows.reduce((held, r) => held + Math.max(0, r[granted] - r[used]), 0);
    const ownLeft = Math.max(0, row[granted] - row[used]);
    const want = Math.max(1, req.want[dir]);
    if (ownLeft < want / 2 && available > 0) {
      const add = Math.min(available, want - ownLeft);
      row[granted] = Math.max(row[granted], row[used]) + add;
      available -= add;
    }
    grant.left[dir] = Math.max(0, row[granted] - row[used]);
    grant.final[dir] = available <= 0;
  }
  return { row, grant };
}

/** The lock key (PostgreSQL advisory, by hashtext) of a customer's cluster limits: grants and claims. */
export const limitsLockKey = (customerId: string) => `vad_limits:${customerId}`;

/** How long a node's claim of a session's first connection counts as an active session (central max_sessions). */
export const CLAIM_WINDOW_MS = 5000;
