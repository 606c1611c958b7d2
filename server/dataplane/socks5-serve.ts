// SOCKS5 on the proxy port (a client whose first byte is 0x05; proxy.ts dispatches): the
// greeting (only user name/password is offered: a client without it gets 0xFF), the RFC 1929
// credentials (the proxy user name and password of the HTTP proxy, checked by the same code:
// status 0 only for a valid credential), then one request: CONNECT (its name's grammar and place,
// admitted, given an exit and dialled exactly as an HTTP CONNECT: rotation, sticky `sessid`,
// `strict`, the source addresses, relayed through another node when the place is served there)
// or UDP ASSOCIATE (socks5-udp.ts, relay-udp-dial.ts for a place served by another node); BIND is refused (0x07). A sticky session that moved to another
// exit cannot say so (a reply has no header). Our refusals map to the reply codes:
//   0x01 the store is unavailable, or the relay node failed    0x02 not allowed: a malformed user
//   name (with a valid credential), paused, a cap, a connection limit, a disabled or expired
//   client, the egress policy, port 0    0x03 no node up in the place asked for (the HTTP proxy's
//   412), or the exit of a strict sticky session has gone (503)    0x04 the name did not resolve
//   0x05 connection refused    0x06 the destination did not answer in time
//   0x07 BIND (and UDP when no relay node of the place could be reached, or the one asked refused)
//   0x08 an unknown address type
// Refusals are recorded for support with transport `socks5`, as the HTTP proxy's are. The handshake is bounded in size (MAX_HANDSHAKE) and in time (the header
// timeout of the proxy port); nothing of it is counted, only the payload relayed after a success reply.
import type { Connection } from './relay.ts';
import type { ProxyErrorCode } from '../contract/errors.ts';
import { type Credential, type ProxyContext, type ProxyUser, admitOn, answerAndClose as finish, authenticate, dialTarget, exitInstead, placeOf, relayUnreachable } from './proxy-admission.ts';
import { dialFailure, ExitFailed } from './proxy-answer.ts';
import {
  CMD_CONNECT, CMD_UDP_ASSOCIATE, METHOD_NONE_ACCEPTABLE, METHOD_USERPASS, REP, type Address, type ReplyCode,
  encodeAuthStatus, encodeMethod, encodeReply, parseGreeting, parseRequest, parseUserPass,
} from './socks5.ts';
import { startAssociation } from './socks5-udp.ts';
import { dialRelayUdp } from './relay-udp-dial.ts';
import type { Exit } from './exits.ts';

/** A greeting, credentials and a request at their largest (257 + 513 + 262 bytes), rounded up. */
const MAX_HANDSHAKE = 1536;

/** The reply code of a refusal (the HTTP proxy's error code): 0x01 the store, 0x03 no exit there, else 0x02. */
export function replyForCode(code: ProxyErrorCode): ReplyCode {
  if (code === 'proxy_unavailable') return REP.generalFailure;
  if (code === 'location_unavailable' || code === 'sticky_exit_gone') return REP.networkUnreachable;
  return REP.notAllowed;
}

/** The reply code of a failed dial (from here or through a relay node), from the HTTP proxy's classification. */
export function replyForDialError(err: Error): ReplyCode {
  if (err instanceof ExitFailed) return REP.networkUnreachable;
  switch (dialFailure(err, '', 0).proxyError) {
    case 'destination_ip_prohibited': return REP.notAllowed;
    case 'dns_timeout': case 'destination_not_found': return REP.hostUnreachable;
    case 'connection_refused': return REP.connectionRefused;
    case 'destination_ip_unroutable': return (err as NodeJS.ErrnoException).code === 'ENETUNREACH' ? REP.networkUnreachable : REP.hostUnreachable;
    case 'connection_timeout': return REP.ttlExpired;
    default: return REP.generalFailure;
  }
}

/** Takes the connection over from its first bytes (`first` starts with 0x05). */
export function serveSocks5(ctx: ProxyContext, conn: Connection, first: Buffer): void {
  let buf: Buffer = Buffer.alloc(0);
  let stage: 'greeting' | 'auth' | 'checking' | 'request' = 'greeting';
  let cred: Credential | undefined;
  conn.transport = 'socks5';
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
        // RFC 1929 succeeds for a valid credential only; a malformed name is refused at the request
        return authenticate(ctx, conn, a.user, a.pass, (c) => {
          if (!c) return finish(conn, encodeAuthStatus(false));
          cred = c;
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
        return request(ctx, conn, cred!, r.command, r, rest);
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

/** One request of an authenticated client: its name's grammar and place, the admission, then CONNECT or UDP ASSOCIATE. */
function request(ctx: ProxyContext, conn: Connection, c: Credential, command: number, target: Address, rest: Buffer): void {
  if (command !== CMD_CONNECT && command !== CMD_UDP_ASSOCIATE) return finish(conn, encodeReply(REP.commandNotSupported));
  const place = placeOf(ctx, conn, c);
  if (!place.ok) return finish(conn, encodeReply(replyForCode(place.code)));
  const u = place.user;
  if (command === CMD_UDP_ASSOCIATE) return associate(ctx, conn, u, target);
  if (target.port === 0) return finish(conn, encodeReply(REP.notAllowed));
  const { host, port } = target;
  const admitted = admitOn(ctx, conn, u, { host, port });
  if (!admitted.ok) return finish(conn, encodeReply(replyForCode(admitted.code)));
  // A sticky session that moved (admitted.moved) cannot say so: a SOCKS5 reply has no header.
  conn.hold(rest);
  dialTarget(ctx, conn, u, admitted.exit, host, port, (b, release) => conn.fromOutbound(b, release)).then(
    ({ socket: s }) => conn.startTcp(s, encodeReply(REP.succeeded, s.localAddress && s.localPort ? { host: s.localAddress, port: s.localPort } : undefined)),
    (err: Error) => finish(conn, encodeReply(replyForDialError(err))),
  );
}

/**
 * UDP ASSOCIATE: from one of this process's exits when the place has one (rotation and `sessid`
 * over its source addresses; a sticky session held on another node moves here, or with `strict`
 * fails 0x03), else through a relay node of the place (one relay connection for the association,
 * relay-udp-dial.ts). A relay that could not be reached is tried once more through the exit chosen
 * instead, as a TCP request is (exitInstead); 0x07 when no relay could be opened, 0x03 for a strict
 * key whose exit went.
 */
function associate(ctx: ProxyContext, conn: Connection, u: ProxyUser, requested: Address): void {
  const here = u.routes.filter((r) => r.via === 'here');
  const admitted = admitOn(ctx, conn, u, undefined, here.length ? here : u.routes);
  if (!admitted.ok) return finish(conn, encodeReply(replyForCode(admitted.code)));
  const fail = (rep: ReplyCode, bound?: Address) => finish(conn, encodeReply(rep, bound));
  const start = (exit: Exit, retry: boolean): void => {
    const { route, localAddress } = exit;
    if (route.via === 'here') return startAssociation(ctx, conn, requested, { egressAddress: localAddress }, fail);
    dialRelayUdp(route, u.sessionId, ctx.connectTimeoutMs).then(
      (relay) => (conn.closed ? relay.close() : startAssociation(ctx, conn, requested, { relay }, fail)),
      (err: Error) => {
        ctx.log.info({ transport: conn.transport, session: u.sessionId.slice(0, 8), via: route.node, err: err.message }, 'proxy UDP relay failed');
        if (!relayUnreachable(err)) return fail(REP.commandNotSupported);
        const again = exitInstead(ctx, conn, u, exit, retry);
        if (again.ok) start(again.exit, false);
        else fail(again.sticky ? REP.networkUnreachable : REP.commandNotSupported);
      },
    );
  };
  start(admitted.exit, true);
}
