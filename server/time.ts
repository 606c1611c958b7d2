/**
 * The wall clock that periodic caps and session expiry read (epoch ms). Injectable for tests:
 * setWallClock(() => Date.now() + aDay) moves this process a day ahead without a sleep;
 * setWallClock() puts the system clock back.
 */
let wall: () => number = Date.now;

/**
 * Two machines' clocks further apart than this are worth saying so (a node's log, the doctor's clock
 * and cluster checks): expiry, periods, leases and relay grants are judged by one machine's clock.
 */
export const CLOCK_SKEW_WARN_MS = 5_000;

export function wallClock(): number {
  return wall();
}
export function setWallClock(fn?: () => number): void {
  wall = fn ?? Date.now;
}

let isoMs = NaN;
let isoText = '';

/**
 * ISO 8601 UTC with milliseconds and `Z`, the one date-time format of the API. Formatted once
 * per millisecond (toISOString costs about 1 µs; a session creation asks three times, a group of
 * creations many more within the same millisecond).
 */
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoText = new Date(ms).toISOString();
    isoMs = ms;
  }
  return isoText;
}

/** Cuts a secret identifier (session id = VLESS credential) for logs. */
export function shortId(id: string): string {
  return id.length > 8 ? `${id.slice(0, 8)}…` : id;
}

/** Names of query (or fragment) parameters whose value is a credential: token, access_token, api_key, auth, password, sig... */
const SECRET_PARAM = /token|auth|key|secret|pass(word)?|sig(nature)?|credential/i;

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/**
 * Replaces every UUID in a URL or text with its first 8 characters, and the whole secret of a
 * subscription URL (`/sub/<secret>`) with `…` (a part of it would narrow a guess). Credentials go
 * entirely: the value of a token-like query or fragment parameter (`?token=`, `&access_token=`,
 * `#token=`, `api_key`, `auth`, ...; names compared after percent-decoding), a `Bearer` or
 * `Basic` credential, and an API token (`vad_...`) anywhere keeps only its stored prefix.
 */
export function redactIds(text: string): string {
  return text
    .replace(/([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '$1…')
    .replace(/\/sub\/[^/?#\s"']+/g, '/sub/…')
    .replace(/([?&;#])([^=&;#\s"']+)=([^&;#\s"']*)/g, (whole, sep: string, name: string) =>
      SECRET_PARAM.test(decodeName(name)) ? `${sep}${name}=…` : whole)
    .replace(/\b(Bearer|Basic)\s+[^\s"',;]+/gi, '$1 …')
    .replace(/\b(vad_[A-Za-z0-9_-]{6})[A-Za-z0-9_-]+/g, '$1…');
}
