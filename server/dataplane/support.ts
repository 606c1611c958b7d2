// What support staff read of one data plane: the open connections of a session (each one's
// transport, client address, destination, bytes and speed) and the recent refusals of a session
// or a client (why a connection got nothing). Memory only, per instance and per node, bounded:
// the last REFUSALS_KEPT refusals per session and per client, the counts per reason for the last
// hour, and at most TRACKED_KEYS sessions and clients (the oldest dropped first). The control
// plane gathers these from itself and its nodes on read (server/support.ts).

/** How a connection reached the data plane. */
export type Transport = 'ws' | 'tcp' | 'tls' | 'proxy_connect' | 'proxy_request' | 'socks5';

/** One open connection, as support sees it (no path, no payload). */
export interface ConnectionView {
  id: string;
  transport: Transport;
  client_address: string;
  destination: { host: string; port: number };
  uploaded_bytes: number;
  downloaded_bytes: number;
  /** Bytes a second over the last one to two seconds. */
  upload_speed: number;
  download_speed: number;
  opened_at: string;
}

/** One refused connection. `reason` is an admission refusal (admission.ts) or a proxy error code. */
export interface RefusalView {
  at: string;
  reason: string;
  transport: Transport;
  client_address: string;
  session_id: string;
}

/** What a data plane knows of a session's or a client's refusals. */
export interface RefusalDigest {
  refusals: RefusalView[];
  /** Refusals per reason over the last hour (every one, not only those still listed). */
  counts_last_hour: Record<string, number>;
}

/** Who a refusal is about: a session, with its customer and client when known. */
export interface RefusalSubject {
  sessionId: string;
  customerId?: string;
  clientId?: string;
}

export const REFUSALS_KEPT = 100;
const TRACKED_KEYS = 5000;
const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;

/** Bytes a second over the current and the previous whole second (cheap: one add per chunk). */
export class Rate {
  private sec = 0;
  private cur = 0;
  private prev = 0;

  add(n: number, nowMs: number): void {
    const s = Math.floor(nowMs / 1000);
    if (s !== this.sec) {
      this.prev = s === this.sec + 1 ? this.cur : 0;
      this.cur = 0;
      this.sec = s;
    }
    this.cur += n;
  }

  perSecond(nowMs: number): number {
    const s = Math.floor(nowMs / 1000);
    const frac = nowMs / 1000 - s;
    if (s === this.sec) return Math.round((this.prev + this.cur) / (1 + frac));
    if (s === this.sec + 1) return Math.round(this.cur / (1 + frac));
    return 0;
  }
}

/** The refusals of one session or one client: a ring of the last ones, counts per minute and reason. */
class RefusalTrail {
  readonly ring: RefusalView[] = [];
  private next = 0;
  /** `${minute}\u0000${reason}` → count, minutes within the last hour. */
  private readonly perMinute = new Map<string, number>();

  add(r: RefusalView, now: number, listed: boolean): void {
    if (listed) {
      if (this.ring.length < REFUSALS_KEPT) this.ring.push(r);
      else this.ring[this.next] = r;
      this.next = (this.next + 1) % REFUSALS_KEPT;
    }
    const key = `${Math.floor(now / MINUTE_MS)}\u0000${r.reason}`;
    this.perMinute.set(key, (this.perMinute.get(key) ?? 0) + 1);
    if (this.perMinute.size > 61 * 4) this.prune(now);
  }

  last(): RefusalView | undefined {
    const n = this.ring.length;
    return n ? this.ring[(this.next - 1 + n) % n] : undefined;
  }

  /** The listed refusals, newest first. */
  list(): RefusalView[] {
    const n = this.ring.length;
    const out: RefusalView[] = [];
    for (let i = 1; i <= n; i++) out.push(this.ring[(this.next - i + n * 2) % n]);
    return out;
  }

  counts(now: number): Record<string, number> {
    this.prune(now);
    const out: Record<string, number> = {};
    for (const [key, n] of this.perMinute) {
      const reason = key.slice(key.indexOf('\u0000') + 1);
      out[reason] = (out[reason] ?? 0) + n;
    }
    return out;
  }

  private prune(now: number): void {
    const oldest = Math.floor((now - HOUR_MS) / MINUTE_MS);
    for (const key of this.perMinute.keys()) if (Number(key.slice(0, key.indexOf('\u0000'))) <= oldest) this.perMinute.delete(key);
  }
}

const clientKey = (customerId: string, clientId: string) => `${customerId}\u0000${clientId}`;

/** The refusals of one data plane, by session and by client. */
export class RefusalLog {
  private readonly bySession = new Map<string, RefusalTrail>();
  private readonly byClient = new Map<string, RefusalTrail>();
  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /** Records a refusal; a flood (the same reason from the same address within a second) is counted, not listed again. */
  record(subject: RefusalSubject, reason: string, transport: Transport, clientAddress: string): void {
    const now = this.now();
    const view: RefusalView = { at: new Date(now).toISOString(), reason, transport, client_address: clientAddress, session_id: subject.sessionId };
    const session = trail(this.bySession, subject.sessionId);
    const prev = session.last();
    const listed = !(prev && prev.reason === reason && prev.client_address === clientAddress && now - Date.parse(prev.at) < 1000);
    session.add(view, now, listed);
    if (subject.customerId && subject.clientId) trail(this.byClient, clientKey(subject.customerId, subject.clientId)).add(view, now, listed);
  }

  ofSession(sessionId: string): RefusalDigest {
    return digest(this.bySession.get(sessionId), this.now());
  }

  ofClient(customerId: string, clientId: string): RefusalDigest {
    return digest(this.byClient.get(clientKey(customerId, clientId)), this.now());
  }
}

function trail(map: Map<string, RefusalTrail>, key: string): RefusalTrail {
  let t = map.get(key);
  if (t) {
    // most recently refused last: the oldest key is the first one dropped
    map.delete(key);
    map.set(key, t);
    return t;
  }
  t = new RefusalTrail();
  map.set(key, t);
  if (map.size > TRACKED_KEYS) map.delete(map.keys().next().value!);
  return t;
}

function digest(t: RefusalTrail | undefined, now: number): RefusalDigest {
  return t ? { refusals: t.list(), counts_last_hour: t.counts(now) } : { refusals: [], counts_last_hour: {} };
}
