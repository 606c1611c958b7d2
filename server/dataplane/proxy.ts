// Geo-targeted HTTP forward proxy (CONNECT and absolute-URI requests). A client whose first byte
// is 0x05 speaks SOCKS5 instead (socks5-serve.ts); both check credentials, place, admit and dial
// through proxy-admission.ts.
//
// Credential scheme (Proxy-Authorization: Basic base64(user:password)):
//   user     = <session-id>[-cc-<COUNTRY>][-city-<city>][-sessid-<key>][-sesstime-<min>][-strict]
//              (the grammar: contract/proxy-string.ts), e.g. 0f8a...-cc-US-city-new.york-sessid-a1
//   password = <session-id> (the same id again; the id is the secret, as it is for VLESS)
// The traffic is counted, limited and reported on that session exactly like VLESS traffic
// (same runtime admit/lease/flow code). A missing or unknown credential answers 407; a malformed
// user name 400 with its grammar code; a country or city not in the zone catalogue 412 (naming
// the country's cities). The exit (this process from one of its source addresses, or an up
// node's relay) is chosen per connection by exits.ts, sticky with `sessid`. Every error answer
// carries Proxy-Status and X-Proxy-Error (proxy-answer.ts).
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
import { Connection } from './relay.ts';
import type { ClientSide, ClientHandlers } from './sides.ts';
import type { OnData } from './outbound.ts';
import { type BodyEnd, bodyOf } from './proxy-body.ts';
import { type Head, answerRewriter, endToEnd, header, parseHead } from './proxy-head.ts';
import { type ProxyContext, type ProxyRefusal, type ProxyUser, admitOn, answerAndClose as respond, authenticate, dialTarget, placeOf } from './proxy-admission.ts';
import { SESSION_MOVED_HEADER, dialFailure, errorResponse } from './proxy-answer.ts';
import { SOCKS_VERSION } from './socks5.ts';
import { serveSocks5 } from './socks5-serve.ts';

export type { ProxyContext } from './proxy-admission.ts';

const MAX_HEAD = 16 * 1024;
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

const refusalAnswer = (r: ProxyRefusal): Buffer => errorResponse(r.code, r.message, r.details ? { details: r.details } : {});

function handle(ctx: ProxyContext, conn: Connection, head: Head, rest: Buffer, gate: Gate): void {
  conn.transport = head.method === 'CONNECT' ? 'proxy_connect' : 'proxy_request';
  // 1. credentials (the store may load the session first; a bad credential is 407 before a malformed name's 400)
  const { user, pass } = credentialsOf(head);
  authenticate(ctx, conn, user, pass, (c) => {
    if (!c) {
      return respond(conn, errorResponse('proxy_auth_required',
        'Proxy-Authorization: Basic with user <session-id>[-cc-XX[-city-name]][-sessid-key[-sesstime-min][-strict]] and password <session-id> is required', { headers: [AUTH_HEADER] }));
    }
    // 2. the user name's grammar (400), its place: in the catalogue, some exit of it up (412)
    const place = placeOf(ctx, conn, c);
    if (!place.ok) return respond(conn, refusalAnswer(place));
    // 3. the request target
    const target = targetOf(head);
    if (typeof target === 'string') return respond(conn, errorResponse('invalid_request', target));
    relay(ctx, conn, { head, rest, gate, user: place.user, target });
  });
}

interface Request {
  head: Head;
  rest: Buffer;
  gate: Gate;
  user: ProxyUser;
  target: Target;
}

/**
 * The session admits the connection (same rules as VLESS), its exit is chosen (exits.ts: the
 * customer's sticky session, or the next exit), then the request is relayed to its destination.
 */
function relay(ctx: ProxyContext, conn: Connection, req: Request): void {
  const { head, user } = req;
  const { host, port, upload, body: bodyEnd } = req.target;
  const admitted = admitOn(ctx, conn, user, { host, port });
  if (!admitted.ok) return respond(conn, refusalAnswer(admitted));
  // Read when the answer's head comes: a retry through another exit may move the key meanwhile.
  const moved = admitted.moved ? [SESSION_MOVED_HEADER] : [];
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
  const onData = head.method === 'CONNECT' ? toClient : answerRewriter(toClient, () => conn.close('bad_answer'), moved);
  dialTarget(ctx, conn, user, admitted.exit, host, port, onData).then(
    (d) => {
      if (d.moved && !moved.length) moved.push(SESSION_MOVED_HEADER);
      conn.startTcp(d.socket, head.method === 'CONNECT' ? Buffer.from(['HTTP/1.1 200 Connection Established', ...moved, '', ''].join('\r\n')) : undefined);
    },
    (err: Error) => {
      const f = dialFailure(err, host, port);
      respond(conn, errorResponse(f.code, f.message, { proxyError: f.proxyError }));
    },
  );
}
