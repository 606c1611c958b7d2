// One accepted connection's view of the runtime: how many bytes the caps let through, how
// long the token buckets of its session, client and customer make it wait, and the counting
// of what moved. Flows (flow.ts) move every byte through a Lease.
import type { CloseReason } from './close-reason.ts';
import { type ConnHandle, type CustomerState, type Dir, type SessionState, SAVE_BYTES, capOf, nowMs } from './meters.ts';
import { Rate } from './support.ts';

/** What a lease reports back to the runtime that granted it. */
export interface LeaseOwner {
  /** A byte cap may have been reached: cut what is over. */
  enforceCaps(customer: CustomerState): void;
  /** SAVE_BYTES moved since the session's last save: save it now (what a kill -9 may lose stays bounded). */
  saveSoon(session: SessionState): void;
  /** The destination was reached: the connection counts from now on. */
  connectionOpened(session: SessionState, conn: ConnHandle): void;
  /** The connection is gone; `counted` when it had been opened (committed). */
  connectionClosed(session: SessionState, conn: ConnHandle, counted: boolean, reason?: CloseReason): void;
}

export class Lease {
  readonly session: SessionState;
  private readonly owner: LeaseOwner;
  readonly conn: ConnHandle;
  private released = false;
  private committed = false;
  /** What this connection moved, and how fast lately (support's view, support.ts). */
  readonly moved = { up: 0, down: 0 };
  readonly rate = { up: new Rate(), down: new Rate() };

  constructor(owner: LeaseOwner, session: SessionState, conn: ConnHandle) {
    this.owner = owner;
    this.session = session;
    this.conn = conn;
  }

  get closed(): boolean {
    return this.released;
  }

  /** Bytes of an n-byte chunk that the byte caps let through now (0 = a cap is reached). */
  grant(dir: Dir, n: number): number {
    if (this.released) return 0;
    const session = this.session, client = session.client, customer = session.customer;
    const room = Math.min(
      capOf(customer.limits.session, dir) + session.capBase[dir] - session.totals[dir],
      capOf(client.limits, dir) + client.capBase[dir] - client.totals[dir],
      capOf(customer.limits.global, dir) + customer.capBase[dir] - customer.totals[dir],
      // a cluster node: what its grants let through (Infinity elsewhere)
      client.allow[dir],
      customer.allow[dir],
    );
    return Math.max(0, Math.min(n, room));
  }

  /**
   * A cluster node: `granted` (what grant() allowed) is short because of a grant that is spent up
   * to it but is not the cap (more may come), so the flow waits for the control plane's next
   * grant instead of being cut (server/store/grants.ts). False when a byte cap or a final grant binds.
   */
  awaitsGrant(dir: Dir, granted: number): boolean {
    if (this.released) return false;
    const session = this.session, client = session.client, customer = session.customer;
    const capRoom = Math.min(
      capOf(customer.limits.session, dir) + session.capBase[dir] - session.totals[dir],
      capOf(client.limits, dir) + client.capBase[dir] - client.totals[dir],
      capOf(customer.limits.global, dir) + customer.capBase[dir] - customer.totals[dir],
    );
    if (capRoom <= granted) return false;
    const clientBinds = client.allow[dir] <= granted, customerBinds = customer.allow[dir] <= granted;
    return (clientBinds || customerBinds) && !(clientBinds && client.allowFinal[dir]) && !(customerBinds && customer.allowFinal[dir]);
  }

  // Each of these reads the three buckets a direction draws from (session, client, customer),
  // written out rather than looped: they run for every chunk, so they allocate nothing.

  /** Largest piece to reserve at once so that no single wait is long. */
  maxPiece(dir: Dir): number {
    const session = this.session;
    return Math.min(session.buckets[dir].maxPiece(), session.client.buckets[dir].maxPiece(), session.customer.buckets[dir].maxPiece());
  }

  /** Whether any speed limit applies to this direction now (otherwise reserve() is a no-op). */
  shapes(dir: Dir): boolean {
    const session = this.session;
    return session.buckets[dir].limited || session.client.buckets[dir].limited || session.customer.buckets[dir].limited;
  }

  /** Reserves n bytes from every bucket this connection draws from; returns ms to wait. */
  reserve(dir: Dir, n: number): number {
    const session = this.session, now = nowMs();
    const ownWait = session.buckets[dir].reserve(n, now);
    const clientWait = session.client.buckets[dir].reserve(n, now);
    const customerWait = session.customer.buckets[dir].reserve(n, now);
    return Math.max(ownWait, clientWait, customerWait);
  }

  /** Changes whenever a rate of a bucket this direction draws from changes. */
  shapeEpoch(dir: Dir): number {
    const session = this.session;
    return session.buckets[dir].epoch + session.client.buckets[dir].epoch + session.customer.buckets[dir].epoch;
  }

  /** Longest time, at the current rates, until every reservation made so far is paid (ms). */
  debtWait(dir: Dir): number {
    const session = this.session, now = nowMs();
    return Math.max(session.buckets[dir].debtMs(now), session.client.buckets[dir].debtMs(now), session.customer.buckets[dir].debtMs(now));
  }

  /** Counts n payload bytes moved; cuts connections when a byte cap is reached. */
  account(dir: Dir, n: number): void {
    if (n <= 0) return;
    const session = this.session, client = session.client, customer = session.customer;
    this.moved[dir] += n;
    this.rate[dir].add(n, nowMs());
    session.totals[dir] += n;
    client.totals[dir] += n;
    customer.totals[dir] += n;
    client.allow[dir] -= n;
    customer.allow[dir] -= n;
    if (session.totals.up + session.totals.down - session.lastSaved.up - session.lastSaved.down >= SAVE_BYTES) this.owner.saveSoon(session);
    if (
      session.totals[dir] - session.capBase[dir] >= capOf(customer.limits.session, dir) ||
      client.totals[dir] - client.capBase[dir] >= capOf(client.limits, dir) ||
      customer.totals[dir] - customer.capBase[dir] >= capOf(customer.limits.global, dir) ||
      (client.allowFinal[dir] && client.allow[dir] <= 0) ||
      (customer.allowFinal[dir] && customer.allow[dir] <= 0)
    ) {
      this.owner.enforceCaps(customer);
    }
  }

  /** A chunk found no room under a byte cap: cut what is over. */
  capReached(): void {
    this.owner.enforceCaps(this.session.customer);
  }

  /** The destination is reached: the connection is counted on its session (idempotent). A
   *  lease released before this (a failed dial) leaves the session as it was. */
  commit(): void {
    if (this.released || this.committed) return;
    this.committed = true;
    this.owner.connectionOpened(this.session, this.conn);
  }

  /** The connection is gone (idempotent); `reason` says whether its session may linger. */
  release(reason?: CloseReason): void {
    if (this.released) return;
    this.released = true;
    this.owner.connectionClosed(this.session, this.conn, this.committed, reason);
  }
}
