// SOCKS5 on the proxy port (a client whose first byte is 0x05; proxy.ts dispatches): the
// greeting (only user name/password is offered: a client without it gets 0xFF), the RFC 1929
// credentials (the proxy user name and password of the HTTP proxy, checked by the same code),
// then one request: CONNECT (admitted, placed and dialled exactly as an HTTP CONNECT, relayed
// through another node when the user name asks for a place served there) or UDP ASSOCIATE
// (socks5-udp.ts); BIND is refused (0x07). Our refusals map to the reply codes:
//   0x01 the store is unavailable, or the relay node failed    0x02 not allowed: paused, a cap, a
//   connection limit, a disabled or expired client, the egress policy, a malformed name or port 0
//   0x03 no node up in the place asked for (the HTTP proxy's 412)    0x04 the name did not resolve
//   0x05 connection refused    0x06 the destination did not answer in time
//   0x07 BIND (and UDP to a place on another node)    0x08 an unknown address type
// The handshake is bounded in size (MAX_HANDSHAKE) and in time (the header timeout of the
// proxy port); nothing of it is counted, only the payload relayed after a success reply.
import type { Connection } from './relay.ts';
import { EgressRefused } from './egress.ts';
import { type ProxyContext, type ProxyUser, admitOn, authenticate, dialTarget, placeOf } from './proxy-admission.ts';
import {
  CMD_CONNECT, CMD_UDP_ASSOCIATE, METHOD_NONE_ACCEPTABLE, METHOD_USERPASS, REP, type Address, type ReplyCode,
  encodeAuthStatus, encodeMethod, encodeReply, parseGreeting, parseRequest, parseUserPass,
} from './socks5.ts';
import { startAssociation } from './socks5-udp.ts';

/** A greeting, credentials and a request at their largest (257 + 513 + 262 bytes), rounded up. */
const MAX_HANDSHAKE = 1536;

/** The reply code for a failed dial (from here or through a relay node). */
export function replyForDialError(err: Error & { code?: string }): ReplyCode {
  if (err instanceof EgressRefused) return REP.notAllowed;
  const code = err.code ?? '';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME' || code === 'EAI_NODATA' || /^DNS lookup/.test(err.message)) return REP.hostUnreachable;
  if (code === 'ECONNREFUSED') return REP.connectionRefused;
  if (code === 'ENETUNREACH') return REP.networkUnreachable;
  if (code === 'EHOSTUNREACH' || /refused: unreachable$/.test(err.message)) return REP.hostUnreachable;
  if (code === 'ETIMEDOUT' || err.message === 'connect timeout') return REP.ttlExpired;
  return REP.generalFailure;
}

/** Writes the last answer and closes (the same linger as the HTTP proxy's error answers). */
function finish(conn: Connection, answer: Buffer): void {
  if (conn.closed) return;
  conn.preamble = undefined;
  conn.client.write(answer);
  conn.client.end();
  conn.timer(1000, () => conn.close('responded'));
}

/** Takes the connection over from its first bytes (`first` starts with 0x05). */
export function serveSocks5(ctx: ProxyContext, conn: Connection, first: Buffer): void {
  let buf: Buffer = Buffer.alloc(0);
  let stage: 'greeting' | 'auth' | 'checking' | 'request' = 'greeting';
  let user: ProxyUser | undefined;
  const step = (): void => {
    while (!conn.closed && buf.length > 0) {
      if (stage === 'greeting') {
        const g = parseGreeting(buf);
        if (g.kind === 'more') return;
        if (g.kind === 'error') return conn.close('bad_header');
        buf = buf.subarray(g.length);
        if (!g.methods.includes(METHOD_USERPASS)) return finish(conn, encodeMethod(METHOD_NONE_ACCEPTABLE));
        conn.client.write(encodeMethod(METHOD_USERPASS));
        stage = 'auth';
      } else if (stage === 'auth') {
        const a = parseUserPass(buf);
        if (a.kind === 'more') return;
        if (a.kind === 'error') return conn.close('bad_header');
        buf = buf.subarray(a.length);
        stage = 'checking';
        return authenticate(ctx, conn, a.user, a.pass, (u) => {
          if (!u) return finish(conn, encodeAuthStatus(false));
          user = u;
          conn.client.write(encodeAuthStatus(true));
          stage = 'request';
          step();
        });
      } else if (stage === 'request') {
        const r = parseRequest(buf);
        if (r.kind === 'more') return;
        if (r.kind === 'error') return r.reply !== undefined ? finish(conn, encodeReply(r.reply)) : conn.close('bad_header');
        const rest = buf.subarray(r.length);
        buf = Buffer.alloc(0);
        conn.preamble = undefined; // later bytes are held until the destination is reached
        return request(ctx, conn, user!, r.command, r, rest);
      } else return; // checking: bytes wait for the credential's answer
    }
  };
  conn.preamble = (b: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, b]) : b;
    if (buf.length > MAX_HANDSHAKE) return conn.close('bad_header');
    step();
  };
  conn.preamble(first);
}

/** One request of an authenticated client. */
function request(ctx: ProxyContext, conn: Connection, u: ProxyUser, command: number, target: Address, rest: Buffer): void {
  if (command !== CMD_CONNECT && command !== CMD_UDP_ASSOCIATE) return finish(conn, encodeReply(REP.commandNotSupported));
  const place = placeOf(ctx, u);
  if ('unavailable' in place) return finish(conn, encodeReply(REP.networkUnreachable));
  const route = place.route;
  // UDP leaves from the entry node only: the node-to-node relay carries streams.
  if (command === CMD_UDP_ASSOCIATE && route.via === 'relay') return finish(conn, encodeReply(REP.commandNotSupported));
  if (command === CMD_CONNECT && target.port === 0) return finish(conn, encodeReply(REP.notAllowed));
  const refused = admitOn(ctx, conn, u.sessionId, 'socks5');
  if (refused) return finish(conn, encodeReply(refused === 'unavailable' ? REP.generalFailure : REP.notAllowed));
  if (command === CMD_UDP_ASSOCIATE) return startAssociation(ctx, conn, target, (rep, bound) => finish(conn, encodeReply(rep, bound)));
  conn.hold(rest);
  const { host, port } = target;
  dialTarget(ctx, route, u.sessionId, host, port, (b, release) => conn.fromOutbound(b, release)).then(
    (s) => conn.startTcp(s, encodeReply(REP.succeeded, s.localAddress && s.localPort ? { host: s.localAddress, port: s.localPort } : undefined)),
    (err: Error) => {
      ctx.log.info({ transport: 'socks5', session: u.sessionId.slice(0, 8), ...(route.via === 'relay' ? { via: route.node } : {}), err: err.message }, 'proxy outbound failed');
      finish(conn, encodeReply(replyForDialError(err)));
    },
  );
}
