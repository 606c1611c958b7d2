// Permission to use another node's geo relay (cluster/geo.ts, node/relay-server.ts), in two steps:
//
//  1. A relay KEY, made by the control plane for one entry (`from`: a node's id, or `serve`) and
//     one exit, and sent to the entry in its state:
//       key = HMAC-SHA256(base, "key" | from | exp),   base = SHA-256("vad-relay" | exit's token hash)
//     `exp` is at most KEY_MS ahead (the state renews it every minute). Only the control plane and
//     the exit itself know the exit's token hash: no new secret is stored or sent to the exit.
//  2. A per-connection GRANT, made by the entry from its key for one session and one destination:
//       grant = HMAC-SHA256(key, session | host:port | nonce | time)          (a TCP stream)
//       grant = HMAC-SHA256(key, "udp" | session | nonce | time)             (a UDP association)
//     A grant has a kind: the UDP form names no destination (the exit checks each datagram's with
//     its egress policy) and starts with a text no session hash can be, so a TCP grant cannot
//     open a UDP association nor a UDP grant a stream. `session` is a hash of the entry's session id (the exit never learns the id itself), `nonce`
//     128 random bits, `time` the entry's clock in ms.
//
// The exit re-derives both and accepts a grant once: its entry is one the control plane lists as
// a cluster member now, the key has not expired, `time` is within GRANT_MS of its own clock, the
// destination is the one asked for, and the nonce was not seen within the window (RelayNonces).
import { createHash, createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';

/** A relay key is valid at most this long past the minute it was made in (renewed every minute). */
export const KEY_MS = 2 * 60_000;
/** A grant's time may differ from the exit's clock by at most this much, either way. */
export const GRANT_MS = 60_000;
/** Nonces remembered at most (2 × GRANT_MS each); when full, new grants are refused (busy). */
export const MAX_NONCES = 200_000;

/** What a relay request line carries besides the destination. */
export interface RelayCredentials {
  from: string;
  exp: number;
  session: string;
  nonce: string;
  time: number;
  grant: string;
}

const hmac = (key: Buffer | KeyObject, text: string) => createHmac('sha256', key).update(text).digest();
const base = (tokenHash: string) => createHash('sha256').update(`vad-relay\u0000${tokenHash}`).digest();

/** Relay keys as secret key objects, the most recent kept (an HMAC keyed by a Buffer makes one each time: five times its cost). */
const MAX_KEY_OBJECTS = 1024;
const keyObjects = new Map<string, KeyObject>();

/** The key object of `name` (made by `make` the first time; the oldest forgotten past MAX_KEY_OBJECTS). */
function keyObject(name: string, make: () => Buffer): KeyObject {
  let k = keyObjects.get(name);
  if (!k) {
    if (keyObjects.size >= MAX_KEY_OBJECTS) keyObjects.delete(keyObjects.keys().next().value!);
    k = createSecretKey(make());
    keyObjects.set(name, k);
  }
  return k;
}

/** The key `from` uses for the relay of the node with this token hash (expiry `exp`, ms), hex. */
export function relayKey(tokenHash: string, from: string, exp: number): string {
  return hmac(base(tokenHash), `key\u0000${from}\u0000${exp}`).toString('hex');
}

/** The expiry of a key made now: the end of the current minute plus KEY_MS − 1 minute. */
export function keyExpiry(now = Date.now()): number {
  return Math.ceil(now / 60_000) * 60_000 + KEY_MS - 60_000;
}

/** What the exit sees of a session: a hash of its id (32 hex), never the id. */
export function sessionTag(sessionId: string): string {
  return createHash('sha256').update(`vad-relay-session\u0000${sessionId}`).digest('hex').slice(0, 32);
}

/** What a grant is for: a TCP stream to host:port, or a UDP association (no destination). */
export type GrantKind = { kind: 'tcp'; host: string; port: number } | { kind: 'udp' };

const grantText = (session: string, what: GrantKind, nonce: string, time: number) =>
  what.kind === 'udp' ? `udp\u0000${session}\u0000${nonce}\u0000${time}` : `${session}\u0000${what.host}:${what.port}\u0000${nonce}\u0000${time}`;

/** The entry's credentials for one relayed connection of `sessionId` to host:port. */
export function signRelayRequest(key: { from: string; exp: number; key: string }, sessionId: string, host: string, port: number, now = Date.now()): RelayCredentials {
  return signRelayGrant(key, sessionId, { kind: 'tcp', host, port }, now);
}

/** The entry's credentials for one relayed connection of `sessionId` of either kind. */
export function signRelayGrant(key: { from: string; exp: number; key: string }, sessionId: string, what: GrantKind, now = Date.now()): RelayCredentials {
  const session = sessionTag(sessionId);
  const nonce = randomBytes(16).toString('hex');
  const grant = hmac(keyObject(`sign\u0000${key.key}`, () => Buffer.from(key.key, 'hex')), grantText(session, what, nonce, now)).toString('hex');
  return { from: key.from, exp: key.exp, session, nonce, time: now, grant };
}

export type RelayVerdict = 'ok' | 'unauthorized' | 'expired' | 'replayed' | 'busy';

/**
 * Checks a request's credentials at the exit (its own token hash), for host:port; records the
 * nonce when accepted. `entries` are the cluster members the control plane lists now.
 */
export function verifyRelayRequest(tokenHash: string, entries: ReadonlySet<string>, c: RelayCredentials, host: string, port: number, nonces: RelayNonces, now = Date.now()): RelayVerdict {
  return verifyRelayGrant(tokenHash, entries, c, { kind: 'tcp', host, port }, nonces, now);
}

/** Checks a request's credentials at the exit for what it asks (a stream to host:port, or UDP). */
export function verifyRelayGrant(tokenHash: string, entries: ReadonlySet<string>, c: RelayCredentials, what: GrantKind, nonces: RelayNonces, now = Date.now()): RelayVerdict {
  if (!entries.has(c.from)) return 'unauthorized';
  if (!/^[0-9a-f]{32}$/.test(c.session) || !/^[0-9a-f]{32}$/.test(c.nonce) || !/^[0-9a-f]{64}$/.test(c.grant)) return 'unauthorized';
  if (!Number.isSafeInteger(c.exp) || !Number.isSafeInteger(c.time)) return 'unauthorized';
  const derive = () => Buffer.from(relayKey(tokenHash, c.from, c.exp), 'hex');
  // Only a key whose expiry is in the window is kept (a forged one cannot fill the cache); any other is expired.
  const live = c.exp >= now && c.exp <= now + KEY_MS + 60_000;
  const key = live ? keyObject(`verify\u0000${tokenHash}\u0000${c.from}\u0000${c.exp}`, derive) : derive();
  const want = hmac(key, grantText(c.session, what, c.nonce, c.time));
  if (!timingSafeEqual(want, Buffer.from(c.grant, 'hex'))) return 'unauthorized';
  if (!live || Math.abs(now - c.time) > GRANT_MS) return 'expired';
  return nonces.take(c.nonce, now);
}

/** Nonces of accepted grants, kept 2 × GRANT_MS (past that, the time check refuses them anyway). */
export class RelayNonces {
  private readonly seen = new Map<string, number>();
  private readonly max: number;
  constructor(max = MAX_NONCES) {
    this.max = max;
  }
  /** 'ok' (recorded), 'replayed' (seen before) or 'busy' (full of live nonces). */
  take(nonce: string, now = Date.now()): 'ok' | 'replayed' | 'busy' {
    // Insertion order is expiry order (every entry lives the same time from its insertion).
    for (const [n, until] of this.seen) {
      if (until > now) break;
      this.seen.delete(n);
    }
    if (this.seen.has(nonce)) return 'replayed';
    if (this.seen.size >= this.max) return 'busy';
    this.seen.set(nonce, now + 2 * GRANT_MS);
    return 'ok';
  }
  get size(): number {
    return this.seen.size;
  }
}
