// A node's share of its customers' limits (server/cluster/shares.ts decides them): the byte
// grants and speed shares the control plane sends with its state, handed to the data plane as
// what each grant leaves now; grants unused here are given back; without the control plane
// for a while the node drops them and holds the caps from its last sums.
import type { DataPlane } from '../dataplane/api.ts';
import type { NodeState } from '../cluster/node-channel.ts';
import type { CounterJournal, Report } from '../cluster/journal.ts';
import type { WireShare } from '../cluster/shares.ts';
import { KEEP_IDLE } from '../store/grants.ts';
import type { ChannelLink } from './channel-client.ts';

/** Reports acknowledged within this long are kept to count what a grant's `left` does not include. */
const RECENT_ACKED_MS = 10_000;
/** Without the control plane this long, a node drops its grants and holds the caps from its last sums. */
const SHARES_OFFLINE_MS = 5000;
/** A grant unused this long (no open connection, nothing unreported) is given back beyond KEEP_IDLE. */
const RELEASE_IDLE_MS = 2000;
/** A release not yet answered by a share of the new generation is asked again after this long. */
const RELEASE_RETRY_MS = 3000;

/** Which customer and client each session counts for (kept after a session leaves the state). */
export type Owners = Map<string, { customer: string; client: string }>;

/** A share as the data plane takes it: what the grant leaves now (Infinity: no cap that way). */
type ShareNow = { left: { up: number; down: number }; final: { up: boolean; down: boolean }; rateShare: number };

export interface SharesDeps {
  journal: CounterJournal;
  dataPlane: Pick<DataPlane, 'live' | 'setClusterShare'>;
  channel: ChannelLink;
  owners: Owners;
}

export class NodeShares {
  private readonly deps: SharesDeps;
  /** Acknowledged reports of the last RECENT_ACKED_MS: a grant may have been read before them. */
  private recentAcked: Array<Report & { at: number }> = [];
  private sharedKeys = new Set<string>();
  /** The last share taken per key, with the report seq its grant was measured at. */
  private readonly accepted = new Map<string, { sh: WireShare; seq: number }>();
  /** Grants this node gave back (key: the generation released, when it last asked). */
  private readonly released = new Map<string, { gen: number; at: number }>();
  /** Since when each key has had no open connection and no unreported bytes here. */
  private readonly idleSince = new Map<string, number>();
  private offlineSince = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(deps: SharesDeps) {
    this.deps = deps;
  }

  /** Reports the control plane acknowledged just now. */
  acked(reports: Report[], at: number): void {
    for (const r of reports) this.recentAcked.push({ ...r, at });
  }

  /** The journal was renumbered: the reports acknowledged before count no more. */
  forgetAcked(): void {
    this.recentAcked = [];
  }

  apply(shares: NonNullable<NodeState['shares']>, seq: number): void {
    const keys = new Set(Object.keys(shares));
    for (const key of this.sharedKeys) {
      if (keys.has(key)) continue;
      this.accepted.delete(key);
      this.idleSince.delete(key);
      this.released.delete(key);
      this.setShare(key, null);
    }
    this.sharedKeys = keys;
    for (const [key, sh] of Object.entries(shares)) {
      // A share measured before this node's release still counts what it gave back: the node
      // keeps what it kept until a share of the new generation comes.
      const rel = this.released.get(key);
      if (rel && (sh.gen ?? 0) <= rel.gen) continue;
      this.released.delete(key);
      this.accepted.set(key, { sh, seq });
      this.setShare(key, this.shareNow(key, sh, seq));
    }
  }

  start(): void {
    this.timer = setInterval(() => this.everySecond(), 1000);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private everySecond(): void {
    // Cut off from the control plane: no grant can come; the caps hold from the last sums (as
    // without a cluster) rather than leaving a capped customer's traffic waiting.
    if (this.deps.channel.connected) this.offlineSince = 0;
    else if (!this.offlineSince) this.offlineSince = Date.now();
    else if (Date.now() - this.offlineSince >= SHARES_OFFLINE_MS && this.sharedKeys.size) this.apply({}, 0);
    const cutoff = Date.now() - RECENT_ACKED_MS;
    if (this.recentAcked.length && this.recentAcked[0].at < cutoff) this.recentAcked = this.recentAcked.filter((r) => r.at >= cutoff);
    this.releaseIdle(Date.now());
  }

  /** Bytes of a customer (client null) or client moved here after report `seq`: reported since, or not yet. */
  private movedAfter(seq: number, customer: string, client: string | null): { up: number; down: number } {
    const { owners, journal } = this.deps;
    const moved = { up: 0, down: 0 };
    const add = (sid: string, d: { up: number; down: number }) => {
      const o = owners.get(sid);
      if (!o || o.customer !== customer || (client !== null && o.client !== client)) return;
      moved.up += d.up;
      moved.down += d.down;
    };
    for (const r of [...this.recentAcked, ...journal.reports]) if (r.seq > seq) for (const [sid, d] of Object.entries(r.counters)) add(sid, d);
    for (const [sid, d] of journal.pending) add(sid, d);
    return moved;
  }

  private shareNow(key: string, sh: WireShare, seq: number): ShareNow {
    const [customer, client] = key.split('\u0000');
    const moved = this.movedAfter(seq, customer, client ?? null);
    return {
      left: { up: sh.left.up === null ? Infinity : sh.left.up - moved.up, down: sh.left.down === null ? Infinity : sh.left.down - moved.down },
      final: { up: !!sh.final.up, down: !!sh.final.down },
      rateShare: typeof sh.rate === 'number' && sh.rate > 0 && sh.rate <= 1 ? sh.rate : 1,
    };
  }

  private setShare(key: string, share: ShareNow | null): void {
    const [customer, client] = key.split('\u0000');
    this.deps.dataPlane.setClusterShare?.(customer, client ?? null, share);
  }

  /** Customers and clients with an active session or unreported bytes here. */
  private busyKeys(): Set<string> {
    const { owners, dataPlane, journal } = this.deps;
    const busy = new Set<string>();
    for (const [sid, o] of owners) {
      if (dataPlane.live(sid)?.status !== 'active' && !journal.pending.has(sid)) continue;
      busy.add(o.customer);
      busy.add(`${o.customer}\u0000${o.client}`);
    }
    return busy;
  }

  /**
   * Gives back grants this node does not use: a key with no open connection and nothing
   * unreported here for RELEASE_IDLE_MS, all reports acknowledged (so the control plane's `used`
   * counts every byte), holding over twice KEEP_IDLE, keeps KEEP_IDLE and releases the rest.
   * A release not yet seen in a share is asked again (a lost message, a reconnection).
   */
  private releaseIdle(now: number): void {
    const { channel, journal } = this.deps;
    if (!channel.ready) return;
    const busy = this.busyKeys();
    for (const [key, rel] of this.released) {
      if (now - rel.at < RELEASE_RETRY_MS) continue;
      rel.at = now;
      channel.send({ type: 'release', key, gen: rel.gen });
    }
    if (journal.reports.length) return;
    for (const [key, { sh, seq }] of this.accepted) {
      if (busy.has(key)) {
        this.idleSince.delete(key);
        continue;
      }
      if (!this.idleSince.has(key)) this.idleSince.set(key, now);
      if (this.released.has(key) || now - this.idleSince.get(key)! < RELEASE_IDLE_MS) continue;
      const share = this.shareNow(key, sh, seq);
      const finite = (n: number) => (Number.isFinite(n) ? n : 0);
      if (finite(share.left.up) <= 2 * KEEP_IDLE && finite(share.left.down) <= 2 * KEEP_IDLE) continue;
      const gen = sh.gen ?? 0;
      channel.send({ type: 'release', key, gen });
      this.released.set(key, { gen, at: now });
      this.setShare(key, { ...share, left: { up: Math.min(share.left.up, KEEP_IDLE), down: Math.min(share.left.down, KEEP_IDLE) } });
    }
  }
}
