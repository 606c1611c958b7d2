// Geo-targeted HTTP forward proxy (CONNECT and absolute-URI requests).
//
// Credential scheme (Proxy-Authorization: Basic base64(user:password)):
//   user     = <session-id>[-cc-<COUNTRY>[-city-<city>]]   e.g. 0f8a...-cc-US-city-new.york
//   password = <session-id> (the same id again; the id is the secret, as it is for VLESS)
// The traffic is counted, limited and reported on that session exactly like VLESS traffic
// (same runtime admit/lease/flow code). A country or city that is not in the zone catalogue
// answers 412; a missing, malformed or unknown credential answers 407.
import { parseProxyUser, cityToken } from '../contract/proxy-string.ts';
import { Connection } from './relay.ts';
import type { ClientSide } from './sides.ts';
import type { InboundContext } from './vless.ts';
import type { ZoneInfo } from '../domain.ts';
import { dialTcp } from './outbound.ts';
import { EgressRefused } from './egress.ts';
import { isFloodRefusal } from './admission.ts';

const MAX_HEAD = 16 * 1024;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const REASONS: Record<number, string> = {
  400: 'Bad Request', 403: 'Forbidden', 407: 'Proxy Authentication Required', 412: 'Precondition Failed',
  431: 'Request Header Fields Too Large', 502: 'Bad Gateway', 504: 'Gateway Timeout',
};

export interface ProxyContext extends InboundContext {
  zones(): ZoneInfo[];
  sessionExists(id: string): boolean;
}

function errorResponse(status: number, code: string, message: string, extraHeaders: string[] = []): Buffer {
  const body = JSON.stringify({ error: { code, message, details: {} } });
  return Buffer.from(
    [
      `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
      ...extraHeaders,
      '',
      body,
    ].join('\r\n'),
  );
}

function respond(conn: Connection, res: Buffer): void {
  if (conn.closed) return;
  conn.preamble = undefined;
  conn.client.write(res);
  conn.client.end();
  conn.timer(1000, () => conn.close('responded'));
}

interface Head {
  method: string;
  target: string;
  version: string;
  headers: [string, string][];
}

function parseHead(text: string): Head | undefined {
  const lines = text.split('\r\n');
  const m = /^([A-Z]{1,16}) (\S{1,8192}) (HTTP\/1\.[01])$/.exec(lines[0] ?? '');
  if (!m) return undefined;
  const headers: [string, string][] = [];
  for (const line of lines.slice(1)) {
    if (line === '') continue;
    const i = line.indexOf(':');
    if (i <= 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(line.slice(0, i))) return undefined;
    headers.push([line.slice(0, i), line.slice(i + 1).trim()]);
  }
  return { method: m[1], target: m[2], version: m[3], headers };
}

function header(h: Head, name: string): string | undefined {
  const n = name.toLowerCase();
  return h.headers.find(([k]) => k.toLowerCase() === n)?.[1];
}

/** Checks the geo suffix against the zone catalogue; returns an error message or undefined. */
export function checkGeo(zones: ZoneInfo[], country?: string, city?: string): string | undefined {
  if (!country) return undefined;
  const inCountry = zones.filter((z) => z.country.toUpperCase() === country);
  if (inCountry.length === 0) return `country ${country} is not available`;
  if (city && !inCountry.some((z) => z.cities.some((c) => cityToken(c) === city))) return `city ${city} is not available in ${country}`;
  return undefined;
}

export function serveProxy(ctx: ProxyContext, client: ClientSide): Connection {
  const conn = new Connection(client, (c) => ctx.untrack(c));
  ctx.track(conn);
  let buf: Buffer = Buffer.alloc(0);
  conn.timer(ctx.headerTimeoutMs, () => {
    if (!conn.lease && conn.preamble) conn.close('header_timeout');
  });
  conn.preamble = (b: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, b]) : b;
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) {
      if (buf.length > MAX_HEAD) respond(conn, errorResponse(431, 'invalid_request', 'request head too large'));
      return;
    }
    const rest = buf.subarray(end + 4);
    const head = parseHead(buf.subarray(0, end).toString('latin1'));
    buf = Buffer.alloc(0);
    conn.preamble = undefined;
    if (!head) return respond(conn, errorResponse(400, 'invalid_request', 'malformed request'));
    handle(ctx, conn, head, rest);
  };
  return conn;
}

const AUTH_HEADER = 'Proxy-Authenticate: Basic realm="vpn-access"';

function handle(ctx: ProxyContext, conn: Connection, head: Head, rest: Buffer): void {
  // 1. credentials
  const auth = header(head, 'proxy-authorization');
  const m = auth ? /^basic\s+([A-Za-z0-9+/=]+)$/i.exec(auth) : null;
  const decoded = m ? Buffer.from(m[1], 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  const user = colon >= 0 ? decoded.slice(0, colon) : '';
  const pass = colon >= 0 ? decoded.slice(colon + 1) : '';
  const parsed = parseProxyUser(user);
  const sessionId = parsed?.user.toLowerCase() ?? '';
  if (!parsed || !UUID_RE.test(sessionId) || pass.toLowerCase() !== sessionId || !ctx.sessionExists(sessionId)) {
    ctx.log.info({ session: sessionId.slice(0, 8) || undefined }, 'proxy credentials refused');
    return respond(conn, errorResponse(407, 'proxy_auth_required',
      'Proxy-Authorization: Basic with user <session-id>[-cc-XX[-city-name]] and password <session-id> is required', [AUTH_HEADER]));
  }
  // 2. geo-targeting
  const geoError = checkGeo(ctx.zones(), parsed.country, parsed.city);
  if (geoError) return respond(conn, errorResponse(412, 'location_unavailable', geoError));
  // 3. the request target
  let host: string, port: number, upload: Buffer | undefined;
  if (head.method === 'CONNECT') {
    const t = /^(\[[0-9a-fA-F:.]+\]|[^:\s/]+):(\d{1,5})$/.exec(head.target);
    if (!t || +t[2] < 1 || +t[2] > 65535) return respond(conn, errorResponse(400, 'invalid_request', 'CONNECT needs host:port'));
    host = t[1].replace(/^\[|\]$/g, '');
    port = +t[2];
  } else {
    let url: URL;
    try {
      url = new URL(head.target);
    } catch {
      return respond(conn, errorResponse(400, 'invalid_request', 'absolute http:// URI required'));
    }
    if (url.protocol !== 'http:' || !url.hostname) return respond(conn, errorResponse(400, 'invalid_request', 'only http:// URIs are proxied; use CONNECT for https'));
    host = url.hostname.replace(/^\[|\]$/g, '');
    port = url.port ? +url.port : 80;
    const drop = new Set(['proxy-authorization', 'proxy-connection', 'connection', 'keep-alive']);
    const lines = [`${head.method} ${url.pathname}${url.search} ${head.version}`];
    if (!header(head, 'host')) lines.push(`Host: ${url.host}`);
    for (const [k, v] of head.headers) if (!drop.has(k.toLowerCase())) lines.push(`${k}: ${v}`);
    lines.push('Connection: close', '', '');
    upload = Buffer.from(lines.join('\r\n'), 'latin1');
  }
  // 4. the session admits the connection (same rules as VLESS)
  const admitted = ctx.runtime.admit(sessionId, conn);
  if (!admitted.ok) {
    // issue 8 point 10: flood refusals are logged by the runtime (once per session per 10 s)
    if (!isFloodRefusal(admitted.reason)) ctx.log.warn({ transport: 'proxy', session: sessionId.slice(0, 8), reason: admitted.reason }, 'proxy connection refused');
    return respond(conn, errorResponse(403, 'session_refused', `session refused: ${admitted.reason}`));
  }
  conn.lease = admitted.lease;
  if (upload) conn.hold(upload);
  conn.hold(rest);
  dialTcp(host, port, ctx.egress, ctx.connectTimeoutMs, (b, release) => conn.fromOutbound(b, release)).then(
    (s) => conn.startTcp(s, head.method === 'CONNECT' ? Buffer.from('HTTP/1.1 200 Connection Established\r\n\r\n') : undefined),
    (err: Error) => {
      ctx.log.info({ transport: 'proxy', session: sessionId.slice(0, 8), err: err.message }, 'proxy outbound failed');
      const res = err instanceof EgressRefused
        ? errorResponse(403, 'destination_forbidden', 'destination not allowed by the egress policy')
        : errorResponse(502, 'bad_gateway', `cannot reach ${host}:${port}`);
      respond(conn, res);
    },
  );
}
