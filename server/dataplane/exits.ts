// Where a geo-targeted connection leaves: the exits of a place and the sticky sessions over them.
//
// An exit is one way out of the cluster for a place (a country, a city): this process's own data
// plane from one of its source addresses (`--egress-address`, a comma-separated list), or an up
// node's geo relay (which leaves from one of ITS source addresses, chosen by the `slot` the entry
// sends: the same slot, the same address). Without a session key each connection takes the next
// exit round-robin (per place), and a relay the next slot each time it comes round, so that the
// node's source addresses take turns too. With `sessid` the customer's key holds its exit (node and source
// address) for `sesstime` minutes (default 10) from its first connection, or until 60 s pass
// (`stickyIdleMs`) without a new connection; a key whose exit has gone moves to another (`moved`, which the proxy
// announces with `X-Proxy-Session-Moved: 1`), or with `strict` fails (`sticky_exit_gone`).
//
// A relay the entry could not reach (proxy-admission.ts dialTarget: a node crashed or cut off, still
// routed until the control plane finds it lost) is left out of its place's exits for
// UNREACHABLE_MS, unless no other exit is left: new connections and sticky keys go elsewhere.
//
// Sticky state is kept in memory by the entry process, per customer (two customers' keys are
// unrelated), at most `maxKeysPerCustomer` keys each (the least recently used one goes), swept of
// expired entries at most every SWEEP_MS as connections come.
import type { GeoRoute } from './api.ts';
import type { ProxyTarget } from '../contract/proxy-string.ts';

export interface Exit {
  /** Stable identity: `here@<address>` or `relay:<node>#<slot>`. */
  id: string;
  route: GeoRoute;
  /** The source address of an exit from here (none: the system's choice). */
  localAddress?: string;
}

export interface StickyOptions {
  sessid?: string;
  /** Minutes, 1-1440; DEFAULT_SESSTIME_MIN when absent. */
  sesstime?: number;
  strict?: boolean;
}

export type ExitChoice =
  | { ok: true; exit: Exit; moved: boolean }
  | { ok: false; code: 'location_unavailable' | 'sticky_exit_gone'; message: string };

export const DEFAULT_SESSTIME_MIN = 10;
export const STICKY_IDLE_MS = 60_000;
export const DEFAULT_MAX_KEYS_PER_CUSTOMER = 1000;
/** How long a relay that could not be reached is left out (the control plane finds a lost node within seconds). */
export const UNREACHABLE_MS = 10_000;
const SWEEP_MS = 10_000;
/** Relay slots: an exit node maps a slot onto its source addresses (slot modulo their count). */
const SLOTS = 1 << 16;

interface Sticky {
  place: string;
  exit: Exit;
  expiresAt: number;
  lastUsed: number;
}

/** The exits of a place, from its routes: each source address of here, each relay node with a fresh slot. */
export function exitsOf(routes: GeoRoute[], localAddresses: readonly string[], slot: number): Exit[] {
  const out: Exit[] = [];
  for (const r of routes) {
    if (r.via === 'here') {
      if (localAddresses.length === 0) out.push({ id: 'here@any', route: r });
      for (const a of localAddresses) out.push({ id: `here@${a}`, route: r, localAddress: a });
    } else out.push({ id: `relay:${r.node}`, route: { ...r, slot } });
  }
  return out;
}

/** Whether a sticky exit is still among a place's exits (a relay by its node: its slot is its own). */
function stillThere(exit: Exit, exits: Exit[]): Exit | undefined {
  if (exit.route.via === 'here') return exits.find((e) => e.id === exit.id);
  const node = exit.route.node;
  const now = exits.find((e) => e.route.via === 'relay' && e.route.node === node);
  // the route's key and address as they are now, the slot as the session chose it
  return now && now.route.via === 'relay' ? { ...now, route: { ...now.route, slot: exit.route.slot } } : undefined;
}

export class ExitSelector {
  private readonly keys = new Map<string, Map<string, Sticky>>();
  private readonly turn = new Map<string, number>();
  /** Relay nodes that could not be reached, until when they are left out. */
  private readonly unreachableUntil = new Map<string, number>();
  private lastSweep = 0;
  private readonly maxKeys: number;
  private readonly idleMs: number;
  private readonly unreachableMs: number;
  private readonly now: () => number;
  private readonly random: () => number;

  constructor(opts: { maxKeysPerCustomer?: number; idleMs?: number; unreachableMs?: number; now?: () => number; random?: () => number } = {}) {
    this.maxKeys = opts.maxKeysPerCustomer ?? DEFAULT_MAX_KEYS_PER_CUSTOMER;
    this.idleMs = opts.idleMs ?? STICKY_IDLE_MS;
    this.unreachableMs = opts.unreachableMs ?? UNREACHABLE_MS;
    this.now = opts.now ?? Date.now;
    this.random = opts.random ?? Math.random;
  }

  /**
   * The exit of one connection of `customerId` to `place` (e.g. "US/new.york"), among `routes`
   * (this place's up routes) with `localAddresses` (this process's source addresses).
   */
  pick(customerId: string, place: string, routes: GeoRoute[], localAddresses: readonly string[], opts: StickyOptions = {}): ExitChoice {
    const now = this.now();
    this.sweep(now);
    const exits = this.reachable(exitsOf(routes, localAddresses, Math.floor(this.random() * SLOTS)), now);
    if (!opts.sessid) return exits.length ? { ok: true, exit: this.next(place, exits), moved: false } : { ok: false, code: 'location_unavailable', message: `no exit is up in ${place} right now` };
    let mine = this.keys.get(customerId);
    if (!mine) this.keys.set(customerId, (mine = new Map()));
    const held = mine.get(opts.sessid);
    mine.delete(opts.sessid); // set again below: the map's order is least recently used first
    const live = held && held.place === place && now < held.expiresAt && now - held.lastUsed < this.idleMs ? held : undefined;
    if (live) {
      const exit = stillThere(live.exit, exits);
      if (exit) return this.keep(mine, opts.sessid, { ...live, exit, lastUsed: now }, false);
      if (opts.strict) {
        mine.set(opts.sessid, live); // still this session's exit: it may come back
        return { ok: false, code: 'sticky_exit_gone', message: `the exit of session ${opts.sessid} is gone (strict)` };
      }
    }
    if (!exits.length) {
      if (mine.size === 0) this.keys.delete(customerId);
      return { ok: false, code: 'location_unavailable', message: `no exit is up in ${place} right now` };
    }
    const exit = exits[Math.floor(this.random() * exits.length)];
    const expiresAt = live ? live.expiresAt : now + (opts.sesstime ?? DEFAULT_SESSTIME_MIN) * 60_000;
    return this.keep(mine, opts.sessid, { place, exit, expiresAt, lastUsed: now }, live !== undefined);
  }

  /** The exit's relay could not be reached: left out of its place's exits for a while (an exit from here never is). */
  unreachable(exit: Exit): void {
    if (exit.route.via !== 'relay') return;
    this.unreachableUntil.set(exit.route.node, this.now() + this.unreachableMs);
  }

  /** The exits less the relays that could not be reached lately; all of them when that leaves none. */
  private reachable(exits: Exit[], now: number): Exit[] {
    if (this.unreachableUntil.size === 0) return exits;
    const left = exits.filter((e) => e.route.via !== 'relay' || !((this.unreachableUntil.get(e.route.node) ?? 0) > now));
    return left.length ? left : exits;
  }

  /** Sticky keys held (for one customer, or all). */
  size(customerId?: string): number {
    if (customerId !== undefined) return this.keys.get(customerId)?.size ?? 0;
    let n = 0;
    for (const m of this.keys.values()) n += m.size;
    return n;
  }

  private keep(mine: Map<string, Sticky>, sessid: string, s: Sticky, moved: boolean): ExitChoice {
    mine.set(sessid, s);
    while (mine.size > this.maxKeys) mine.delete(mine.keys().next().value!);
    return { ok: true, exit: s.exit, moved };
  }

  /**
   * Round-robin over a place's exits (the list is sorted, so the turn survives a change of order);
   * a relay's slot is the round, so its node's source addresses take turns as well.
   */
  private next(place: string, exits: Exit[]): Exit {
    const sorted = [...exits].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const i = this.turn.get(place) ?? 0;
    this.turn.set(place, (i + 1) % SLOTS);
    const exit = sorted[i % sorted.length];
    return exit.route.via === 'relay' ? { ...exit, route: { ...exit.route, slot: Math.floor(i / sorted.length) } } : exit;
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_MS) return;
    this.lastSweep = now;
    for (const [customer, mine] of this.keys) {
      for (const [k, s] of mine) if (now >= s.expiresAt || now - s.lastUsed >= this.idleMs) mine.delete(k);
      if (mine.size === 0) this.keys.delete(customer);
    }
    if (this.turn.size > 10_000) this.turn.clear();
    for (const [node, until] of this.unreachableUntil) if (until <= now) this.unreachableUntil.delete(node);
  }
}

/** What exit selection needs of an inbound (the proxy's and SOCKS5's context have it). */
export interface ExitContext {
  /** The cluster's routes (DataPlaneDeps.geo); absent: every place leaves from here. */
  geo?: { route(country: string, city: string | undefined): GeoRoute | null; routes?(country: string, city: string | undefined): GeoRoute[] };
  exits: ExitSelector;
  /** This process's source addresses (`--egress-address`); empty: the system's choice. */
  egressAddresses: readonly string[];
}

/** The up routes of a target's place (in a cluster: here and the relays there); untargeted: here. Empty: 412. */
export function placeRoutes(ctx: ExitContext, target: ProxyTarget): GeoRoute[] {
  if (!target.country || !ctx.geo) return [{ via: 'here' }];
  if (ctx.geo.routes) return ctx.geo.routes(target.country, target.city);
  const one = ctx.geo.route(target.country, target.city);
  return one ? [one] : [];
}

/**
 * The exit of one connection of `customerId` to `target` (its place, and its sessid, sesstime and
 * strict): the one call an inbound makes once the session has admitted the connection. `routes`:
 * placeRoutes(ctx, target), when the inbound already has them (it checks for none before admission).
 */
export function pickExit(ctx: ExitContext, customerId: string, target: ProxyTarget, routes: GeoRoute[] = placeRoutes(ctx, target)): ExitChoice {
  const place = target.country ? `${target.country}${target.city ? `/${target.city}` : ''}` : 'any';
  return ctx.exits.pick(customerId, place, routes, ctx.egressAddresses, target);
}
