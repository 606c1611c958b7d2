// What the exit's two ways of taking requests share (node/relay-server.ts: one request per TLS
// connection; node/relay-mux.ts: many over one HTTP/2 connection): the request and its checks'
// input, the tally of what was carried per entry and session, the source address a request leaves
// from, and the relay of a granted TCP request to its destination.
import type { Duplex } from 'node:stream';
import type { SecureContext } from 'node:tls';
import { dialTcp, type OnData } from '../dataplane/outbound.ts';
import { EgressRefused, type EgressPolicy } from '../dataplane/egress.ts';
import type { RelayCredentials, RelayNonces } from '../dataplane/relay-grant.ts';
import type { RelayGuard } from './relay-guard.ts';
import type { Logger } from '../domain.ts';

const DIAL_TIMEOUT_MS = 10_000;
export const IDLE_MS = 300_000;
/** Relayed connections and streams open at once (dialling or piping); over it new ones are refused. */
export const MAX_OPEN = 4096;
/**
 * Reads of the destination (up to 512 KiB each) a relayed request may have waiting to be
 * encrypted and written before the destination is paused: two, so the next is read while one is
 * written (a TLS write completes one event-loop round later at the earliest; with one, the
 * destination stood still for that round after every read).
 */
const DOWN_QUEUE = 2;

export interface RelayServerOptions {
  cert: string;
  key: string;
  tokenHash: string;
  /** The cluster members (node ids, and `serve`) the control plane lists now: grants of others are refused. */
  entries?: () => ReadonlySet<string>;
  egress: EgressPolicy;
  /** Source addresses to leave from: the request's `slot` picks one (slot modulo their count), else round-robin. */
  egressAddresses?: string[];
  log: Logger;
}

/** Bytes carried for one entry and session hash since the last takeCarried. */
export interface Tally {
  up: number;
  down: number;
  open: number;
}

/** What takeCarried returns: by entry, by session hash. */
export type Carried = Record<string, Record<string, { up: number; down: number }>>;

export type Request = RelayCredentials & ({ udp?: false; host: string; port: number } | { udp: true }) & { slot?: number };
export type TcpRequest = Request & { host: string; port: number };

/** A request line (or an HTTP/2 stream's request header), checked for shape only; null if malformed. */
export function parseRequest(line: Buffer | string): Request | null {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(typeof line === 'string' ? line : line.toString('utf8'));
  } catch {
    return null;
  }
  const { from, exp, session, nonce, time, grant, host, port, slot, udp } = r ?? {};
  if (typeof from !== 'string' || from.length > 64 || typeof session !== 'string' || typeof nonce !== 'string' || typeof grant !== 'string') return null;
  if (typeof exp !== 'number' || typeof time !== 'number') return null;
  if (slot !== undefined && (typeof slot !== 'number' || !Number.isInteger(slot) || slot < 0)) return null;
  const creds = { from, exp, session, nonce, time, grant, ...(slot !== undefined ? { slot } : {}) };
  if (udp === true && host === undefined && port === undefined) return { ...creds, udp: true };
  if (udp !== undefined || typeof host !== 'string' || !host || host.length > 255) return null;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) return null;
  return { ...creds, host, port };
}

/** Bytes carried per entry and session hash, until takeCarried hands them over. */
export class Carriage {
  private readonly carried = new Map<string, Tally & { from: string; session: string }>();

  tally(from: string, session: string): Tally {
    const key = `${from}\u0000${session}`;
    let t = this.carried.get(key);
    if (!t) this.carried.set(key, (t = { from, session, up: 0, down: 0, open: 0 }));
    return t;
  }

  take(): Carried {
    const out: Carried = {};
    for (const [key, t] of this.carried) {
      if (t.up || t.down) (out[t.from] ??= {})[t.session] = { up: t.up, down: t.down };
      t.up = 0;
      t.down = 0;
      if (t.open <= 0) this.carried.delete(key);
    }
    return out;
  }
}

/** What every accepted connection shares. */
export interface Listener {
  opts: RelayServerOptions;
  secureContext: SecureContext;
  guard: RelayGuard;
  nonces: RelayNonces;
  entries: () => ReadonlySet<string>;
  /** Relayed connections and streams (dialling or piping). */
  open: Set<{ destroy(): void }>;
  carriage: Carriage;
  /** The next source address of a request without a slot. */
  turn: number;
}

/** The source address of a request: its slot's (slot modulo the addresses), else the next in turn. */
export function sourceOf(l: Listener, slot: number | undefined): string | undefined {
  const addresses = l.opts.egressAddresses ?? [];
  return addresses.length ? addresses[(slot ?? l.turn++) % addresses.length] : undefined;
}

/** How a relayed request is answered: the destination was reached, or why not. */
export interface Answer {
  ok(): void;
  fail(error: 'forbidden' | 'unreachable'): void;
}

/** The entry's side of one relayed request: a TLS connection of its own, or one HTTP/2 stream. */
export type EntrySide = Duplex & { setTimeout(ms: number, cb: () => void): unknown };

/**
 * Dials the destination, answers, then relays both ways, tallied for the entry: the entry's
 * bytes piped to the destination; the destination's read in the dialler's large pooled buffers
 * (outbound.ts) and written to the entry's side as they come (each buffer recycled once
 * written), the destination paused while DOWN_QUEUE of them wait to be written.
 */
export function relayTcp(l: Listener, side: EntrySide, req: TcpRequest, rest: Buffer, answer: Answer): void {
  const localAddress = sourceOf(l, req.slot);
  let down: OnData = () => {}; // set before any read: the dial resolves on connect, reads come later
  dialTcp(req.host, req.port, l.opts.egress, DIAL_TIMEOUT_MS, (b, release) => down(b, release), { dnsTimeoutMs: 5000, keepAliveMs: 30_000, localAddress }).then(
    (out) => {
      if (side.destroyed) return void out.destroy();
      const t = l.carriage.tally(req.from, req.session);
      t.open++;
      let queued = 0;
      down = (b, release) => {
        t.down += b.length;
        if (++queued >= DOWN_QUEUE) out.pause();
        side.write(b, (err) => {
          release(err);
          if (queued-- === DOWN_QUEUE && !err) out.resume();
        });
      };
      out.on('error', () => side.destroy());
      side.on('error', () => out.destroy());
      // Ended by the destination, the entry's side ends once what it holds is written (destroying it
      // would drop that: bytes waiting for the kernel, or for the stream's flow-control window).
      out.on('close', () => (out.readableEnded ? undefined : side.destroy()));
      side.on('close', () => out.destroy());
      out.once('close', () => t.open--);
      const idle = () => {
        side.destroy();
        out.destroy();
      };
      side.setTimeout(IDLE_MS, idle);
      out.setTimeout(IDLE_MS, idle);
      side.on('data', (b: Buffer) => (t.up += b.length));
      out.on('end', () => side.end());
      answer.ok();
      if (rest.length) {
        t.up += rest.length;
        out.write(rest);
      }
      side.pipe(out);
      side.resume();
    },
    (err: Error) => {
      if (!side.destroyed) answer.fail(err instanceof EgressRefused ? 'forbidden' : 'unreachable');
    },
  );
}
