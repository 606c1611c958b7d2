// Geo-targeted HTTP forward proxy (CONNECT and absolute-URI requests). A client whose first byte
// is 0x05 speaks SOCKS5 instead (socks5-serve.ts); both check credentials, place and admit the
// connection through proxy-admission.ts.
//
// Credential scheme (Proxy-Authorization: Basic base64(user:password)):
//   user     = <session-id>[-cc-<COUNTRY>[-city-<city>]]   e.g. 0f8a...-cc-US-city-new.york
//   password = <session-id> (the same id again; the id is the secret, as it is for VLESS)
// The traffic is counted, limited and reported on that session exactly like VLESS traffic
// (same runtime admit/lease/flow code). A country or city that is not in the zone catalogue
// answers 412; a missing, malformed or unknown credential answers 407.
//
// One request per client connection. A plain-http request is parsed, authenticated, rewritten
// (origin-form target, Host from the URI, hop-by-hop headers and Proxy-Authorization removed,
// `Connection: close`) and relayed with its body, framed by Content-Length or chunked encoding;
// the answer's head is rewritten the same way and announces `Connection: close` to the client,
// so a client opens a new connection (authenticated again, to its own destination) for its next
// request. Bytes a client sends after its first request (a pipelined second request) are
// dropped, never forwarded: no destination ever sees another destination's request or the
// session credential. (Keep-alive per destination was the alternative; it needs response
// framing for every status and method, and buys little for a metered proxy.) A CONNECT tunnel
// relays raw bytes both ways after its one authenticated head.
import { PROXY_ERROR_STATUS, proxyErrorBody, type ProxyErrorCode } from '../contract/errors.ts';
import { Connection } from './relay.ts';
import type { ClientSide, ClientHandlers } from './sides.ts';
import type { OnData } from './outbound.ts';
import { type BodyEnd, bodyOf } from './proxy-body.ts';
import { type Head, answerRewriter, endToEnd, header, parseHead } from './proxy-head.ts';
import type { GeoRoute } from './api.ts';
import { EgressRefused } from './egress.ts';
import { type ProxyContext, admitOn, authenticate, dialTarget, placeOf } from './proxy-admission.ts';
import { SOCKS_VERSION } from './socks5.ts';
import { serveSocks5 } from './socks5-serve.ts';

export { checkGeo, type ProxyContext } from './proxy-admission.ts';

const MAX_HEAD = 16 * 1024;
const REASONS: Record<number, string> = {
  400: 'Bad Request', 403: 'Forbidden', 407: 'Proxy Authentication Required', 412: 'Precondition Failed',
  431: 'Request Header Fields Too Large', 502: 'Bad Gateway', 504: 'Gateway Timeout',
};

function errorResponse(code: ProxyErrorCode, message: string, extraHeaders: string[] = []): Buffer {
  const status = PROXY_ERROR_STATUS[code];
  const body = JSON.stringify(proxyErrorBody(code, message));
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

/**
 * The client side as the relay sees it: once the request is known, only its body's bytes are
 * passed on (`gate`); later bytes are dropped.
 */
/** Sets what of the client's later bytes reaches the relay. */
type Gate = (g: (b: Buffer) => Buffer | undefined) => void;

function gatedSide(inner: ClientSide): { side: ClientSide; gate: Gate } {
  let filter: ((b: Buffer) => Buffer | undefined) | undefined;
  const side: ClientSide = {
    remote: inner.remote,
    ...(inner.local ? { local: inner.local } : {}),
    bind: (h: ClientHandlers) => inner.bind({
      data: (b) => {
        const pass = filter ? filter(b) : b;
        if (pass && pass.length) h.data(pass);
      },
      end: () => h.end(),
      close: () => h.close(),
    }),
    write: (buf, done) => inner.write(buf, done),
    onWritable: (cb) => inner.onWritable(cb),
    pause: () => inner.pause(),
    resume: () => inner.resume(),
    end: () => inner.end(),
    destroy: () => inner.destroy(),
    reset: () => inner.reset(),
    ...(inner.ping ? { ping: inner.ping.bind(inner) } : {}),
  };
  return { side, gate: (g) => { filter = g; } };
}

export function serveProxy(ctx: ProxyContext, client: ClientSide): Connection {
  const gated = gatedSide(client);
  const conn = new Connection(gated.side, (c) => ctx.untrack(c));
  ctx.track(conn);
  let buf: Buffer = Buffer.alloc(0);
  conn.timer(ctx.headerTimeoutMs, () => {
    if (!conn.lease && conn.preamble) conn.close('header_timeout');
  });
  conn.preamble = (b: Buffer) => {
    // SOCKS5 on the same port: a client's first byte is its version, 0x05 (no HTTP method starts so)
    if (buf.length === 0 && b[0] === SOCKS_VERSION) return serveSocks5(ctx, conn, b);
    buf = buf.length ? Buffer.concat([buf, b]) : b;
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) {
      if (buf.length > MAX_HEAD) respond(conn, errorResponse('request_header_too_large', 'request head too large'));
      return;
    }
    const rest = buf.subarray(end + 4);
    const head = parseHead(buf.subarray(0, end).toString('latin1'));
    buf = Buffer.alloc(0);
    conn.preamble = undefined;
    // Nothing more reaches the relay until the request is known (then only its body, see handle).
    gated.gate(() => undefined);
    if (!head) return respond(conn, errorResponse('invalid_request', 'malformed request'));
    handle(ctx, conn, head, rest, gated.gate);
  };
  return conn;
}

const AUTH_HEADER = 'Proxy-Authenticate: Basic realm="vpn-access"';

/** The user name and password of a request's Proxy-Authorization: Basic header ('' when absent). */
function credentialsOf(head: Head): { user: string; pass: string } {
  const auth = header(head, 'proxy-authorization');
  const m = auth ? /^basic\s+([A-Za-z0-9+/=]+)$/i.exec(auth) : null;
  const decoded = m ? Buffer.from(m[1], 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  return { user: colon >= 0 ? decoded.slice(0, colon) : '', pass: colon >= 0 ? decoded.slice(colon + 1) : '' };
}

interface Target {
  host: string;
  port: number;
  /** The rewritten head of a plain-http request (none for a tunnel). */
  upload?: Buffer;
  /** Where a plain-http request's body ends (none for a tunnel). */
  body?: BodyEnd;
}

/** Where a request goes, or the message of an invalid_request answer. */
function targetOf(head: Head): Target | string {
  if (head.method === 'CONNECT') {
    const t = /^(\[[0-9a-fA-F:.]+\]|[^:\s/]+):(\d{1,5})$/.exec(head.target);
    if (!t || +t[2] < 1 || +t[2] > 65535) return 'CONNECT needs host:port';
    return { host: t[1].replace(/^\[|\]$/g, ''), port: +t[2] };
  }
  let url: URL;
  try {
    url = new URL(head.target);
  } catch {
    return 'absolute http:// URI required';
  }
  if (url.protocol !== 'http:' || !url.hostname) return 'only http:// URIs are proxied; use CONNECT for https';
  const framing = bodyOf(head);
  if (typeof framing === 'string') return `request body framing refused: ${framing}`;
  // Origin-form target; Host from the URI (RFC 9112 3.2.2); hop-by-hop headers and the
  // credential removed; the destination closes after its answer.
  const lines = [`${head.method} ${url.pathname}${url.search} ${head.version}`, `Host: ${url.host}`];
  for (const [k, v] of endToEnd(head.headers)) if (k.toLowerCase() !== 'host') lines.push(`${k}: ${v}`);
  lines.push('Connection: close', '', '');
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port ? +url.port : 80, upload: Buffer.from(lines.join('\r\n'), 'latin1'), body: framing };
}

function handle(ctx: ProxyContext, conn: Connection, head: Head, rest: Buffer, gate: Gate): void {
  // 1. credentials (the store may load the session first)
  const { user, pass } = credentialsOf(head);
  authenticate(ctx, conn, user, pass, (u) => {
    if (!u) {
      return respond(conn, errorResponse('proxy_auth_required',
        'Proxy-Authorization: Basic with user <session-id>[-cc-XX[-city-name]] and password <session-id> is required', [AUTH_HEADER]));
    }
    // 2. geo-targeting: where it leaves
    const place = placeOf(ctx, u);
    if ('unavailable' in place) return respond(conn, errorResponse('location_unavailable', place.unavailable));
    // 3. the request target
    const target = targetOf(head);
    if (typeof target === 'string') return respond(conn, errorResponse('invalid_request', target));
    relay(ctx, conn, { head, rest, gate, route: place.route, sessionId: u.sessionId, target });
  });
}

interface Request {
  head: Head;
  rest: Buffer;
  gate: Gate;
  route: GeoRoute;
  sessionId: string;
  target: Target;
}

/** The session admits the connection (same rules as VLESS), then the request is relayed to its destination. */
function relay(ctx: ProxyContext, conn: Connection, req: Request): void {
  const { head, route, sessionId } = req;
  const { host, port, upload, body: bodyEnd } = req.target;
  const refused = admitOn(ctx, conn, sessionId, 'proxy');
  if (refused) return respond(conn, errorResponse('session_refused', `session refused: ${refused}`));
  // What of the client's bytes goes on: all of a tunnel; only the body of a plain request.
  const forward = (b: Buffer): Buffer | undefined => {
    if (!bodyEnd) return b;
    const n = bodyEnd.take(b);
    if (bodyEnd.error) {
      conn.close('bad_body');
      return undefined;
    }
    return n === b.length ? b : b.subarray(0, n);
  };
  if (upload) conn.hold(upload);
  const first = forward(req.rest);
  if (first) conn.hold(first);
  req.gate(forward);
  const toClient: OnData = (b, release) => conn.fromOutbound(b, release);
  const onData = head.method === 'CONNECT' ? toClient : answerRewriter(toClient, () => conn.close('bad_answer'));
  dialTarget(ctx, route, sessionId, host, port, onData).then(
    (s) => conn.startTcp(s, head.method === 'CONNECT' ? Buffer.from('HTTP/1.1 200 Connection Established\r\n\r\n') : undefined),
    (err: Error) => {
      ctx.log.info({ transport: 'proxy', session: sessionId.slice(0, 8), ...(route.via === 'relay' ? { via: route.node } : {}), err: err.message }, 'proxy outbound failed');
      const res = err instanceof EgressRefused
        ? errorResponse('destination_forbidden', 'destination not allowed by the egress policy')
        : errorResponse('bad_gateway', `cannot reach ${host}:${port}`);
      respond(conn, res);
    },
  );
}
