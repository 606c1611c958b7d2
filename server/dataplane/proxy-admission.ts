// What the proxy port's two protocols (HTTP proxy, SOCKS5) share, written once and called by
// both: the credential check (a proxy user name carrying the session id, its place and its sticky
// options; the session id as password), the user name's grammar and place (the catalogue, the
// up routes there), the session's admission (the runtime's, as for VLESS) with the choice of the
// connection's exit (exits.ts: rotation, sticky `sessid`, `strict`, this process's source
// addresses), the dial of the destination, and the recording of each refusal for support (with
// the connection's transport: proxy_connect, proxy_request or socks5). Each step answers with the
// contract's error code; the HTTP proxy writes it as an error answer (proxy-answer.ts), SOCKS5 as
// a reply code (socks5-serve.ts).
import type { Socket } from 'node:net';
import { isProxyUserError, parseProxyUser, type ParsedProxyUser, type ProxyUserError } from '../contract/proxy-string.ts';
import type { ProxyErrorCode } from '../contract/errors.ts';
import type { ZoneInfo } from '../domain.ts';
import type { GeoRoute } from './api.ts';
import type { InboundContext } from './vless.ts';
import type { Connection } from './relay.ts';
import { dialTcp, type OnData } from './outbound.ts';
import { dialRelay } from './relay-dial.ts';
import { EgressRefused } from './egress.ts';
import { RelayRefused, RelayTimeout } from './relay-tls.ts';
import { type Refusal, isFloodRefusal } from './admission.ts';
import { type Exit, type ExitContext, pickExit, placeRoutes } from './exits.ts';
import { checkGeo, ExitFailed, refusalCode } from './proxy-answer.ts';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface ProxyContext extends InboundContext, ExitContext {
  zones(): ZoneInfo[];
  sessionExists(id: string): boolean;
}

/** Why a proxy connection gets nothing: the contract's code, words, and the JSON record's details. */
export interface ProxyRefusal {
  ok: false;
  code: ProxyErrorCode;
  message: string;
  details?: Record<string, unknown>;
  /** The admission's own reason, when the session refused. */
  reason?: Refusal;
}

/** A credential that names a live session: its id, and its user name parsed (or what is malformed in it). */
export interface Credential {
  sessionId: string;
  parsed: ParsedProxyUser | ProxyUserError;
}

/** An authenticated user whose name is well-formed and whose place has up routes. */
export interface ProxyUser {
  sessionId: string;
  target: ParsedProxyUser;
  /** placeRoutes of the target: never empty. */
  routes: GeoRoute[];
}

/** Records a refusal of `conn` for support, on the session it named. */
function record(ctx: ProxyContext, conn: Connection, sessionId: string, code: string): void {
  ctx.runtime.refused(sessionId, code, conn.transport, conn.client.remote);
}

/** Writes the last answer and closes after a short linger (an HTTP error answer, a SOCKS5 failure reply). */
export function answerAndClose(conn: Connection, answer: Buffer): void {
  if (conn.closed) return;
  conn.preamble = undefined;
  conn.client.write(answer);
  conn.client.end();
  conn.timer(1000, () => conn.close('responded'));
}

/**
 * Checks a proxy credential (`conn.transport` set): `then` gets the session it names, with the
 * user name parsed, or undefined (unknown session, password other than the session id). A
 * malformed name still names its user, so a bad credential is refused before a malformed name.
 * A store fed from a remote database loads the session first; SQLite answers at once. Nothing
 * is called once `conn` closed. A refused credential that names a session is that session's
 * refusal (proxy_auth_required).
 */
export function authenticate(ctx: ProxyContext, conn: Connection, user: string, pass: string, then: (c: Credential | undefined) => void, prepared = false): void {
  const parsed = parseProxyUser(user);
  const sessionId = parsed.user.toLowerCase();
  if (!prepared && UUID_RE.test(sessionId)) {
    const loading = ctx.prepare?.(sessionId);
    if (loading) return void loading.then(() => !conn.closed && authenticate(ctx, conn, user, pass, then, true));
  }
  const exists = UUID_RE.test(sessionId) && ctx.sessionExists(sessionId);
  if (!exists || pass.toLowerCase() !== sessionId) {
    if (exists) record(ctx, conn, sessionId, 'proxy_auth_required');
    ctx.log.info({ transport: conn.transport, session: sessionId.slice(0, 8) || undefined }, 'proxy credentials refused');
    return then(undefined);
  }
  then({ sessionId, parsed });
}

/**
 * The user name's grammar and place: the user, or why it gets nothing (the name's grammar code;
 * location_unavailable for a place not in the catalogue, or with no node up), recorded for support.
 */
export function placeOf(ctx: ProxyContext, conn: Connection, c: Credential): { ok: true; user: ProxyUser } | ProxyRefusal {
  const { sessionId, parsed } = c;
  const refuse = (code: ProxyErrorCode, message: string, details?: Record<string, unknown>): ProxyRefusal => {
    record(ctx, conn, sessionId, code);
    return { ok: false, code, message, ...(details ? { details } : {}) };
  };
  if (isProxyUserError(parsed)) return refuse(parsed.error, parsed.message);
  const geoError = checkGeo(ctx.zones(), parsed.country, parsed.city);
  if (geoError) return refuse('location_unavailable', geoError.message, geoError.details);
  const routes = placeRoutes(ctx, parsed);
  if (!routes.length) {
    const where = parsed.city ? `${parsed.city} (${parsed.country})` : parsed.country;
    return refuse('location_unavailable', `no node is up in ${where} right now`, { country: parsed.country, ...(parsed.city ? { city: parsed.city } : {}) });
  }
  return { ok: true, user: { sessionId, target: parsed, routes } };
}

/**
 * The session admits the connection (same rules as VLESS: pause, caps, connection limits; a
 * refusal recorded by the runtime) and its lease is set on `conn`, with the destination support
 * lists; then its exit is chosen among `routes` (default: the user's), sticky with `sessid`.
 * `moved`: a sticky session's exit had gone and it took another.
 */
export function admitOn(ctx: ProxyContext, conn: Connection, u: ProxyUser, destination: { host: string; port: number } | undefined, routes = u.routes): { ok: true; exit: Exit; moved: boolean } | ProxyRefusal {
  const admitted = ctx.runtime.admit(u.sessionId, conn, { transport: conn.transport, remote: conn.client.remote });
  if (!admitted.ok) {
    // flood refusals are logged by the runtime (once per session per 10 s)
    if (!isFloodRefusal(admitted.reason)) ctx.log.warn({ transport: conn.transport, session: u.sessionId.slice(0, 8), reason: admitted.reason }, 'proxy connection refused');
    return { ok: false, code: refusalCode(admitted.reason), message: `session refused: ${admitted.reason}`, details: { reason: admitted.reason }, reason: admitted.reason };
  }
  conn.lease = admitted.lease;
  if (destination) conn.destination = destination;
  const choice = pickExit(ctx, admitted.lease.session.customer.id, u.target, routes);
  return choice.ok ? choice : { ok: false, code: choice.code, message: choice.message };
}

/** A dialled destination, and whether the request's sticky key moved to reach it (a retry through another exit). */
export interface Dialled {
  socket: Socket;
  moved: boolean;
}

/**
 * The relay of an exit could not be reached (refused, reset, closed, another certificate than its
 * pin): not its answer (a refusal, the destination unreachable from there) nor a time-out (the
 * relay or the destination it dials may only be slow).
 */
export const relayUnreachable = (err: Error) => !(err instanceof RelayRefused) && !(err instanceof EgressRefused) && !(err instanceof RelayTimeout);

/**
 * Where a request goes whose exit's relay could not be reached (a node crashed or cut off, still
 * routed until the control plane finds it lost), as proxy providers do: that relay is avoided for a
 * while (exits.ts) and, on the first failure (`retry`), another exit of the place is chosen; a
 * sticky key moves with it (`moved`). None: the place has no other exit, or (`sticky`) a strict key
 * was held on the one that went.
 */
export function exitInstead(ctx: ProxyContext, conn: Connection, u: ProxyUser, exit: Exit, retry: boolean): { ok: true; exit: Exit; moved: boolean } | { ok: false; sticky?: string } {
  ctx.exits.unreachable(exit);
  if (!retry || conn.closed || !conn.lease) return { ok: false };
  const again = pickExit(ctx, conn.lease.session.customer.id, u.target, u.routes);
  if (!again.ok) return again.code === 'sticky_exit_gone' ? { ok: false, sticky: again.message } : { ok: false };
  const { route } = exit;
  if (route.via === 'relay' && again.exit.route.via === 'relay' && again.exit.route.node === route.node) return { ok: false }; // the place has no other exit
  ctx.log.info({ transport: conn.transport, session: u.sessionId.slice(0, 8), ...(route.via === 'relay' ? { via: route.node } : {}), to: again.exit.id }, 'proxy request retried through another exit');
  return again;
}

/**
 * Dials host:port from here (the egress policy applies, from the exit's source address) or
 * through the exit's relay node. A failure is logged, recorded for support when the egress
 * policy refused the destination, and rejected with the error (proxy-answer.ts dialFailure
 * classifies it). A relay that could not be reached is dialled once more through the exit chosen
 * instead (exitInstead), so the client sees no failure; with a strict key, `sticky_exit_gone`.
 */
export function dialTarget(ctx: ProxyContext, conn: Connection, u: ProxyUser, exit: Exit, host: string, port: number, onData: OnData, retry = true): Promise<Dialled> {
  const { route, localAddress } = exit;
  const dialled = route.via === 'relay'
    ? dialRelay(route, u.sessionId, host, port, ctx.connectTimeoutMs, onData)
    : dialTcp(host, port, ctx.egress, ctx.connectTimeoutMs, onData, localAddress ? { ...ctx.dial, localAddress } : ctx.dial);
  return dialled.then((socket) => ({ socket, moved: false }), (err: Error) => {
    const via = route.via === 'relay' ? { via: route.node } : {};
    ctx.log.info({ transport: conn.transport, session: u.sessionId.slice(0, 8), ...via, err: err.message }, 'proxy outbound failed');
    if (err instanceof EgressRefused) record(ctx, conn, u.sessionId, 'destination_forbidden');
    if (route.via !== 'relay' || !relayUnreachable(err)) throw err;
    const again = exitInstead(ctx, conn, u, exit, retry);
    if (!again.ok) throw again.sticky ? new ExitFailed('sticky_exit_gone', again.sticky) : new ExitFailed('bad_gateway', `${host}:${port}: the exit node could not be reached`);
    return dialTarget(ctx, conn, u, again.exit, host, port, onData, false).then((d) => ({ socket: d.socket, moved: again.moved }));
  });
}
