// VLESS inbound: collects and parses the request header (reassembling it across frames or
// packets, with a deadline), authorises the session id through the runtime, dials the
// destination and hands over to the relay. Anything wrong closes the connection with no response.
import { parseVlessHeader, VLESS_RESPONSE_HEADER, type VlessHeader } from './vless-header.ts';
import { Connection } from './relay.ts';
import type { ClientSide } from './sides.ts';
import type { Runtime } from './runtime.ts';
import type { Logger } from '../domain.ts';
import { dialTcp, dialUdp, type DialOptions } from './outbound.ts';
import { isFloodRefusal } from './admission.ts';
import { type EgressPolicy, EgressRefused } from './egress.ts';

export interface InboundContext {
  runtime: Runtime;
  log: Logger;
  egress: EgressPolicy;
  /** The TCP inbounds speak TLS (support names their transport `tls`). */
  tls: boolean;
  headerTimeoutMs: number;
  connectTimeoutMs: number;
  /** Name resolution (lookup, timeout) and keep-alive of destinations. */
  dial: DialOptions;
  track(c: Connection): void;
  untrack(c: Connection): void;
  /** Loads what admission reads for this session, when the store needs to (DataPlaneDeps.store.prepare). */
  prepare?(sessionId: string): Promise<void> | null;
}

export function serveVless(ctx: InboundContext, client: ClientSide, transport: 'ws' | 'tcp', early?: Buffer): Connection {
  const conn = new Connection(client, (c) => ctx.untrack(c));
  ctx.track(conn);
  conn.transport = transport === 'tcp' && ctx.tls ? 'tls' : transport;
  let buf: Buffer = Buffer.alloc(0);
  let header: VlessHeader | undefined;
  conn.timer(ctx.headerTimeoutMs, () => {
    if (!conn.lease) {
      ctx.log.debug({ transport, remote: client.remote }, 'vless header timeout');
      conn.close('header_timeout');
    }
  });
  conn.preamble = (b: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, b]) : b;
    const r = parseVlessHeader(buf);
    if (r.kind === 'more') return;
    if (r.kind === 'error') {
      ctx.log.debug({ transport, remote: client.remote, reason: r.reason }, 'vless header rejected');
      conn.close('bad_header');
      return;
    }
    const h = r.header;
    header = h;
    const rest = buf.subarray(r.length);
    buf = Buffer.alloc(0);
    conn.preamble = undefined; // further bytes are held until the outbound is ready
    if (h.command === 'mux') {
      ctx.log.info({ transport, session: h.id.slice(0, 8) }, 'vless mux refused');
      conn.close('mux');
      return;
    }
    // A store fed from a remote database loads the session first; SQLite answers at once.
    const loading = ctx.prepare?.(h.id);
    if (loading) {
      conn.hold(rest); // bytes after the header, kept in order with those that follow while it loads
      void loading.then(() => !conn.closed && admit(Buffer.alloc(0)));
    } else admit(rest);
  };
  const admit = (rest: Buffer) => {
    const h = header!;
    // Admitted now, counted once the destination is reached (Connection.startTcp/startUdp
    // commit the lease): a failed dial leaves the session as it was.
    const admitted = ctx.runtime.admit(h.id, conn, { transport: conn.transport, remote: client.remote });
    if (!admitted.ok) {
      // flood refusals are logged by the runtime, at most once per session per 10 s
      if (!isFloodRefusal(admitted.reason)) ctx.log.warn({ transport, session: h.id.slice(0, 8), reason: admitted.reason }, 'vless connection refused');
      conn.close('refused');
      return;
    }
    conn.lease = admitted.lease;
    conn.destination = { host: h.address, port: h.port };
    conn.hold(rest);
    const dial = h.command === 'udp'
      ? dialUdp(h.address, h.port, ctx.egress, ctx.connectTimeoutMs, ctx.dial).then((u) => conn.startUdp(u, VLESS_RESPONSE_HEADER))
      : dialTcp(h.address, h.port, ctx.egress, ctx.connectTimeoutMs, (b, release) => conn.fromOutbound(b, release), ctx.dial).then((s) => conn.startTcp(s, VLESS_RESPONSE_HEADER));
    dial.catch((err: Error) => {
      if (err instanceof EgressRefused) ctx.runtime.refused(h.id, 'destination_forbidden', conn.transport, client.remote);
      ctx.log.info({ transport, session: h.id.slice(0, 8), err: err.message }, 'vless outbound failed');
      conn.close('dial_failed');
    });
  };
  if (early && early.length) conn.preamble(early);
  return conn;
}
