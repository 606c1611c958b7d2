// What the proxy port's two protocols (HTTP proxy, SOCKS5) share: the credential check (a proxy
// user name carrying the session id and its geo-targeting, the session id as password), where a
// geo-targeted connection leaves (here, or relayed to another node), the session's admission
// (the runtime's, as for VLESS) and the dial of the destination. Written once, called by both.
import type { Socket } from 'node:net';
import { parseProxyUser, cityToken } from '../contract/proxy-string.ts';
import type { ZoneInfo } from '../domain.ts';
import type { GeoRoute } from './api.ts';
import type { InboundContext } from './vless.ts';
import type { Connection } from './relay.ts';
import { dialTcp, type OnData } from './outbound.ts';
import { dialRelay } from './relay-dial.ts';
import { type Refusal, isFloodRefusal } from './admission.ts';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface ProxyContext extends InboundContext {
  zones(): ZoneInfo[];
  sessionExists(id: string): boolean;
  /** Where a geo-targeted request leaves (DataPlaneDeps.geo); absent: from here. */
  geo?: { route(country: string, city: string | undefined): GeoRoute | null };
}

/** A proxy credential that names a live session: the session and the place asked for. */
export interface ProxyUser {
  sessionId: string;
  country?: string;
  city?: string;
}

export function checkGeo(zones: ZoneInfo[], country?: string, city?: string): string | undefined {
  if (!country) return undefined;
  const inCountry = zones.filter((z) => z.country.toUpperCase() === country);
  if (inCountry.length === 0) return `country ${country} is not available`;
  if (city && !inCountry.some((z) => z.cities.some((c) => cityToken(c) === city))) return `city ${city} is not available in ${country}`;
  return undefined;
}

/**
 * Checks a proxy credential: `then` gets the session and place it names, or undefined (malformed
 * user name, password other than the session id, unknown session). A store fed from a remote
 * database loads the session first; SQLite answers at once. Nothing is called once `conn` closed.
 */
export function authenticate(ctx: ProxyContext, conn: Connection, user: string, pass: string, then: (u: ProxyUser | undefined) => void, prepared = false): void {
  const parsed = parseProxyUser(user);
  const sessionId = parsed?.user.toLowerCase() ?? '';
  if (!prepared && UUID_RE.test(sessionId)) {
    const loading = ctx.prepare?.(sessionId);
    if (loading) return void loading.then(() => !conn.closed && authenticate(ctx, conn, user, pass, then, true));
  }
  if (!parsed || !UUID_RE.test(sessionId) || pass.toLowerCase() !== sessionId || !ctx.sessionExists(sessionId)) {
    ctx.log.info({ session: sessionId.slice(0, 8) || undefined }, 'proxy credentials refused');
    return then(undefined);
  }
  then({ sessionId, ...(parsed.country ? { country: parsed.country } : {}), ...(parsed.city ? { city: parsed.city } : {}) });
}

/** Where the user's connection leaves: a route, or why no place serves it (unknown place, or no node up there). */
export function placeOf(ctx: ProxyContext, u: ProxyUser): { route: GeoRoute } | { unavailable: string } {
  const geoError = checkGeo(ctx.zones(), u.country, u.city);
  if (geoError) return { unavailable: geoError };
  // In a cluster: leave from a node up in that country (and city), relayed there if not this one.
  const route: GeoRoute | null = u.country && ctx.geo ? ctx.geo.route(u.country, u.city) : { via: 'here' };
  if (!route) return { unavailable: `no node is up in ${u.city ? `${u.city} (${u.country})` : u.country} right now` };
  return { route };
}

/** The session admits the connection (same rules as VLESS: pause, caps, connection limits): its
 *  lease is set on `conn`; else the refusal, logged unless it is a flood refusal. */
export function admitOn(ctx: ProxyContext, conn: Connection, sessionId: string, transport: 'proxy' | 'socks5'): Refusal | undefined {
  const admitted = ctx.runtime.admit(sessionId, conn);
  if (!admitted.ok) {
    // flood refusals are logged by the runtime (once per session per 10 s)
    if (!isFloodRefusal(admitted.reason)) ctx.log.warn({ transport, session: sessionId.slice(0, 8), reason: admitted.reason }, 'proxy connection refused');
    return admitted.reason;
  }
  conn.lease = admitted.lease;
  return undefined;
}

/** Dials host:port from here (the egress policy applies) or through the route's relay node. */
export function dialTarget(ctx: ProxyContext, route: GeoRoute, sessionId: string, host: string, port: number, onData: OnData): Promise<Socket> {
  return route.via === 'relay'
    ? dialRelay(route, sessionId, host, port, ctx.connectTimeoutMs, onData)
    : dialTcp(host, port, ctx.egress, ctx.connectTimeoutMs, onData, ctx.dial);
}
