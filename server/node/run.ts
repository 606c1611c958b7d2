// `vpn-access node run`: a data-plane node of the cluster. It runs the same data plane as
// `serve` (server/dataplane) with its own DataPlaneDeps, and connects OUT to the control plane
// over a WebSocket (server/cluster/node-channel.ts describes the messages):
//
//  - what it may carry: only the sessions the control plane placed on it, with their customers'
//    limits and counter sums (the `state` message, re-sent on every change). Pause and a session
//    no longer placed here cut its connections at once; `removed` cuts all and stops the node.
//  - what it reports: counter DELTAS (bytes moved since the previous report) and the session
//    events, at least every second. What it counts goes to its journal in the data folder
//    (<data-dir>/node-journal.log, cluster/journal.ts) before it can be lost with the process;
//    each report has a sequence number and stays in the journal until the control plane
//    acknowledges it, so neither a control-plane restart nor a node's kill -9 loses a counted
//    byte; reports are resent after a reconnection and the control plane ignores a seq it
//    already applied.
//  - without a reachable control plane it keeps carrying the sessions it knows with the last
//    limits it had, and reconnects with backoff, trying the control URLs in turn.
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { join } from 'node:path';
import { isIP } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import WebSocket from 'ws';
import { createDataPlane } from '../dataplane/index.ts';
import type { DataPlane, DataPlaneDeps } from '../dataplane/api.ts';
import type { LimitScope, LimitValues, Logger, RuntimePatch, SessionRow } from '../domain.ts';
import { NODE_CHANNEL_PATH, NODE_WS_PATH, quotaBaseKey, type NodeState } from '../cluster/node-channel.ts';
import { CounterBaselines } from '../cluster/counter-baselines.ts';
import { CounterJournal, type Report } from '../cluster/journal.ts';
import type { WireShare } from '../cluster/shares.ts';
import { KEEP_IDLE } from '../store/grants.ts';
import { routeFor, type RelayTarget } from '../cluster/geo.ts';
import { createRelayServer } from './relay-server.ts';
import { loadOrCreateSelfSigned } from '../tls/self-signed.ts';
import { pinOf, TlsCertificates } from '../tls/certificates.ts';
import { peerPin } from '../dataplane/relay-dial.ts';
import { LINK_ALPN } from '../tls/index.ts';
import { hashToken } from '../store/store.ts';
import { randomUUID, X509Certificate } from 'node:crypto';
import type { ZoneInfo } from '../domain.ts';

export interface NodeRunOptions {
  controls: string[];
  token: string;
  host: string;
  port: number;
  vlessTcpPort: number | null;
  proxyPort: number | null;
  egress: 'public-only' | 'lan' | 'allow-all';
  egressAddress?: string;
  /** The geo relay listener's port (0: any free one; null: none, this node is no geo exit for others). */
  relayPort?: number | null;
  /**
   * TLS on the VLESS (ws and tcp) and proxy listeners: `on` or `off` (the CLI decides `auto`);
   * the certificate from the files when given (watched, reloaded), else a self-signed one kept in
   * `<data-dir>/tls/` and made for the node's public host once the control plane names it.
   */
  tls?: { mode: 'on' | 'off'; certFile?: string; keyFile?: string };
  dataDir: string;
  /** PEM CA certificate(s) trusted for an https/wss control URL (else the system's). */
  controlCa?: string;
  /**
   * The SHA-256 of the control plane's certificate (DER, 64 hex digits, as links' `pcs`): an
   * https/wss control URL is then trusted by this pin alone (a self-signed certificate works),
   * checked before anything, the node token included, is sent.
   */
  controlPin?: string;
  log: Logger;
}

/** How often a report (deltas, events, contact) is sent. */
const REPORT_MS = 500;
const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 5_000;
/** Reports sealed in one tick at most (each within the channel's frame bound, cluster/node-guard.ts). */
const MAX_REPORTS_PER_TICK = 4;
/**
 * Reports sent and not yet acknowledged on a channel at most: a backlog (resent after a
 * reconnection) goes out as acknowledgements come, within the channel's per-node rates.
 */
const SEND_WINDOW = 8;

/** The node's synchronous store for the data plane: the last state the control plane sent. */
class NodeView implements Pick<DataPlaneDeps['store'], 'getSession' | 'saveRuntime' | 'getLimits' | 'sumCounters' | 'quotaBase' | 'prepare' | 'clusterRefusal'> {
  sessions = new Map<string, SessionRow>();
  limits: NodeState['limits'] = {};
  sums: NodeState['sums'] = {};
  bases: NonNullable<NodeState['bases']> = {};
  private readonly baselines = new CounterBaselines();
  dataPlane: DataPlane | null = null;
  /** Where what the data plane counts goes first: the node's journal. */
  readonly journal: CounterJournal;

  constructor(journal: CounterJournal) {
    this.journal = journal;
  }

  getSession(id: string): SessionRow | undefined {
    const row = this.sessions.get(id);
    if (!row) return undefined;
    if (this.dataPlane?.live(id)) return row;
    // The runtime starts this session's totals from here: what is not yet applied counts too.
    const start = this.baselines.start(id, { up: row.uploaded_bytes, down: row.downloaded_bytes }, this.journal.unapplied(id));
    return { ...row, uploaded_bytes: start.up, downloaded_bytes: start.down };
  }

  saveRuntime(id: string, patch: RuntimePatch): void {
    const moved = this.baselines.advance(id, patch);
    this.journal.record(id, { up: moved.up, down: moved.down, status: patch.status, duration: patch.duration, connections: patch.connections });
  }

  getLimits(customerId: string, scope: LimitScope): LimitValues | undefined {
    return this.limits[customerId]?.[scope] ?? undefined;
  }

  sumCounters(customerId: string, clientId?: string): { uploaded_bytes: number; downloaded_bytes: number } {
    const s = this.sums[clientId === undefined ? customerId : `${customerId}\u0000${clientId}`];
    return { uploaded_bytes: s?.up ?? 0, downloaded_bytes: s?.down ?? 0 };
  }

  quotaBase(customerId: string, scope: LimitScope, entityId: string, periodStart: number): { up: number; down: number } | undefined {
    return this.bases[quotaBaseKey(customerId, scope, entityId, periodStart)];
  }

  /**
   * Asks the control plane before a session's first connection here (set by runNode): its answer
   * carries the session's row and its customer's limits as stored now (read-your-writes: a
   * creation, resume or limits change answered by any instance holds for this connection) and
   * decides central max_sessions.
   */
  claim: ((sessionId: string, row: SessionRow | undefined) => Promise<void>) | null = null;
  /** Refusals the control plane decided (a claim refused), taken by the next admission. */
  refusals = new Map<string, 'max_sessions'>();
  /** Sessions unknown here asked about lately (each at most once a second, at most UNKNOWN_PER_S in all). */
  private readonly unknownAsked = new Map<string, number>();

  prepare(sessionId: string): Promise<void> | null {
    if (!this.claim) return null;
    const row = this.sessions.get(sessionId);
    const live = this.dataPlane?.live(sessionId);
    if (live && live.open_connections > 0) return null;
    if (!row && !this.mayAskUnknown(sessionId, Date.now())) return null;
    return this.claim(sessionId, row);
  }

  private mayAskUnknown(id: string, now: number): boolean {
    for (const [k, at] of this.unknownAsked) if (now - at >= 1000) this.unknownAsked.delete(k);
    if (this.unknownAsked.has(id) || this.unknownAsked.size >= UNKNOWN_PER_S) return false;
    this.unknownAsked.set(id, now);
    return true;
  }

  /** The control plane's answer to a claim: the session as stored (null: not placed here) and its customer's limits. */
  freshen(sessionId: string, row: SessionRow | null | undefined, limits: NodeState['limits'][string] | undefined): void {
    if (row === undefined) return;
    if (row === null || row.id !== sessionId) {
      this.sessions.delete(sessionId);
      return;
    }
    this.sessions.set(row.id, row);
    if (limits && JSON.stringify(this.limits[row.customer_id]) !== JSON.stringify(limits)) {
      this.limits = { ...this.limits, [row.customer_id]: limits };
      this.dataPlane?.limitsChanged(row.customer_id);
    }
  }

  clusterRefusal(sessionId: string): 'max_sessions' | undefined {
    const r = this.refusals.get(sessionId);
    this.refusals.delete(sessionId);
    return r;
  }
}

/** Unknown sessions a node asks the control plane about, at most, per second. */
const UNKNOWN_PER_S = 50;
/** How long a node waits for the control plane's answer to a claim before deciding alone. */
const CLAIM_TIMEOUT_MS = 2000;
/** Reports acknowledged within this long are kept to count what a grant's `left` does not include. */
const RECENT_ACKED_MS = 10_000;
/** Without the control plane this long, a node drops its grants and holds the caps from its last sums. */
const SHARES_OFFLINE_MS = 5000;
/** A grant unused this long (no open connection, nothing unreported) is given back beyond KEEP_IDLE. */
const RELEASE_IDLE_MS = 2000;
/** A release not yet answered by a share of the new generation is asked again after this long. */
const RELEASE_RETRY_MS = 3000;

export interface RunningNode {
  ports: { vless_ws_port: number; vless_tcp_port: number | null; proxy_port: number | null; relay_port?: number; relay_pcs?: string; tls: boolean; tls_pcs: string | null };
  /** Resolves with why the node stopped ('removed' when the control plane removed it, 'closed'). */
  stopped: Promise<'removed' | 'closed'>;
  close(): Promise<void>;
}

/**
 * A TLS connection to the control plane whose certificate has the pinned SHA-256, verified
 * before the caller sends a byte; rejects on another certificate, an error or a 5 s timeout.
 */
export function pinnedTls(url: URL, pin: string): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const s = tlsConnect({ host, port: Number(url.port || 443), ...(isIP(host) ? {} : { servername: host }), rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error('TLS handshake with the control plane timed out'));
    }, 5000);
    s.once('secureConnect', () => {
      clearTimeout(timer);
      const got = peerPin(s);
      if (got !== pin) {
        s.destroy();
        reject(new Error(`the control plane's certificate (sha256 ${got.slice(0, 16)}…) does not match --control-pin; nothing was sent`));
        return;
      }
      resolve(s);
    });
    s.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

function channelUrl(control: string): string {
  const u = new URL(control);
  if (u.protocol === 'http:') u.protocol = 'ws:';
  else if (u.protocol === 'https:') u.protocol = 'wss:';
  u.pathname = u.pathname.replace(/\/+$/, '') + NODE_CHANNEL_PATH;
  return u.toString();
}

const isWildcard = (host: string) => host === '0.0.0.0' || host === '::';

/** The TLS facts a node reports with its ports: on or off, and the pin of a self-signed certificate. */
function tlsFacts(tls: TlsCertificates): { tls: boolean; tls_pcs: string | null } {
  const cert = tls.certificate;
  return { tls: tls.enabled, tls_pcs: tls.enabled && cert?.selfSigned ? cert.fingerprint : null };
}

export async function runNode(opts: NodeRunOptions): Promise<RunningNode> {
  const { log } = opts;
  mkdirSync(opts.dataDir, { recursive: true });
  // Unacknowledged reports and what was counted but not reported, as left by a previous run.
  const journal = CounterJournal.open(join(opts.dataDir, 'node-journal.log'), log);
  importLegacyReports(join(opts.dataDir, 'node-reports.json'), journal, log);
  // What the previous process counted goes into reports now, before this process carries
  // anything: their seqs are at most the boot seq the control plane's crash repair waits for.
  while (journal.seal());

  // TLS on the node's listeners: one certificate for the ws port, the raw TCP inbound and the proxy.
  const tls = await TlsCertificates.open({
    mode: opts.tls?.mode ?? 'off',
    publicHost: isWildcard(opts.host) ? 'localhost' : opts.host,
    dataDir: opts.dataDir,
    certFile: opts.tls?.certFile,
    keyFile: opts.tls?.keyFile,
    watchIntervalMs: 2000,
    log,
  });
  const view = new NodeView(journal);
  /**
   * This process's random id, sent on every channel's first report: another id tells the control
   * plane the node restarted, so the sessions the previous process carried are repaired
   * (server/cluster/crash-repair.ts) once the reports up to `bootSeq` (the last seq issued before
   * this process could carry anything: before its first state) are applied.
   */
  const bootId = randomUUID();
  let bootSeq: number | null = null;
  // The geo proxy: requests for another zone's country or city leave through that node's relay.
  let geoZone = '';
  let geoZones: ZoneInfo[] = [];
  let geoRelays: RelayTarget[] = [];
  /** Who may use this node's relay listener now (the control plane's list: a removed node is gone from it). */
  let relayEntries: ReadonlySet<string> = new Set();
  const geo = {
    route: (country: string, city: string | undefined) => routeFor(geoZones, country, city, (z) => z.code === geoZone, geoRelays),
  };
  /** Relay grants for this node's own relay listener are keyed by its token's hash. */
  const tokenHash = hashToken(opts.token);
  const dataPlane = createDataPlane({
    store: view,
    events: { publish: (e) => journal.event(e) },
    zones: { list: () => geoZones },
    geo,
    log,
    config: {
      host: opts.host,
      vlessTcpPort: opts.vlessTcpPort,
      proxyPort: opts.proxyPort,
      wsPath: NODE_WS_PATH,
      statsIntervalMs: 5000,
      heartbeatIntervalMs: 30_000,
      egress: opts.egress,
      egressAddress: opts.egressAddress,
      ...(tls.current ? { tls: tls.current } : {}),
    },
  });
  view.dataPlane = dataPlane;

  const onRequest = (_req: unknown, res: import('node:http').ServerResponse) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 'not_found', message: 'This is a data-plane node: only VLESS over WebSocket is served here.', details: {} } }));
  };
  const http: Server = tls.current ? createHttpsServer({ cert: tls.current.cert, key: tls.current.key, ALPNProtocols: LINK_ALPN }, onRequest) : createServer(onRequest);
  if (tls.current) {
    tls.attach(http as unknown as import('node:tls').Server);
    http.on('tlsClientError', () => { /* bad handshakes are dropped */ });
  }
  http.on('upgrade', (req, socket, head) => {
    if (!dataPlane.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(opts.port, opts.host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const started = await dataPlane.start();
  const address = http.address();
  // The geo relay listener: TLS with a self-signed certificate of its own, pinned by the entries.
  let relay: ReturnType<typeof createRelayServer> | null = null;
  let relayFacts: { relay_port: number; relay_pcs: string } | null = null;
  if (opts.relayPort !== undefined && opts.relayPort !== null) {
    const pair = await loadOrCreateSelfSigned(join(opts.dataDir, 'relay'), isWildcard(opts.host) ? 'localhost' : opts.host);
    relay = createRelayServer({ cert: pair.cert, key: pair.key, tokenHash, entries: () => relayEntries, egress: opts.egress, egressAddress: opts.egressAddress, log });
    const server = relay;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.relayPort!, opts.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const a = server.address();
    relayFacts = { relay_port: typeof a === 'object' && a ? a.port : opts.relayPort, relay_pcs: pinOf(new X509Certificate(pair.cert)) };
  }
  const ports = {
    vless_ws_port: typeof address === 'object' && address ? address.port : opts.port,
    vless_tcp_port: started.vlessTcpPort,
    proxy_port: started.proxyPort,
    ...(relayFacts ?? {}),
    ...tlsFacts(tls),
  };
  // A certificate reloaded from its files, or made for the public host: new handshakes get it,
  // and the next report tells the control plane its pin (links follow).
  tls.onChange((pair) => {
    dataPlane.updateTls?.(pair);
    Object.assign(ports, tlsFacts(tls));
  });
  tls.watch();

  // State from the control plane
  const applyState = (state: NodeState) => {
    const before = view.sessions;
    const oldLimits = view.limits;
    view.sessions = new Map(state.sessions.map((s) => [s.id, s]));
    view.limits = state.limits;
    view.sums = state.sums;
    view.bases = state.bases ?? {};
    for (const [id] of before) {
      const now = view.sessions.get(id);
      // No longer placed here, or paused: cut its connections here.
      if ((!now || now.paused) && dataPlane.live(id)) dataPlane.pause(id);
    }
    for (const s of state.sessions) if (s.paused && dataPlane.live(s.id)) dataPlane.pause(s.id);
    for (const c of Object.keys(state.limits)) if (JSON.stringify(oldLimits[c]) !== JSON.stringify(state.limits[c])) dataPlane.limitsChanged(c);
    for (const row of state.sessions) owners.set(row.id, { customer: row.customer_id, client: row.client_id });
    if (typeof state.zone === 'string') geoZone = state.zone;
    if (typeof state.public_host === 'string' && state.public_host) {
      tls.coverHost(state.public_host).catch((err: unknown) => log.warn({ err: String(err) }, `TLS: no certificate for ${state.public_host} could be made; keeping the one in force`));
    }
    if (Array.isArray(state.zones)) geoZones = state.zones;
    if (Array.isArray(state.relays)) geoRelays = state.relays;
    if (Array.isArray(state.relay_entries)) relayEntries = new Set(state.relay_entries);
    applyShares(state.shares ?? {}, state.shareSeq ?? 0);
  };

  // Cluster limits: the node's grants and speed shares (server/cluster/shares.ts).
  /** Which customer and client each session counts for (kept after a session leaves the state). */
  const owners = new Map<string, { customer: string; client: string }>();
  /** Acknowledged reports of the last RECENT_ACKED_MS: a grant may have been read before them. */
  let recentAcked: Array<Report & { at: number }> = [];
  let sharedKeys = new Set<string>();
  /** Bytes of a customer (client null) or client moved here after report `seq`: reported since, or not yet. */
  const movedAfter = (seq: number, customer: string, client: string | null) => {
    const moved = { up: 0, down: 0 };
    const add = (sid: string, d: { up: number; down: number }) => {
      const o = owners.get(sid);
      if (!o || o.customer !== customer || (client !== null && o.client !== client)) return;
      moved.up += d.up;
      moved.down += d.down;
    };
    for (const r of [...recentAcked, ...journal.reports]) if (r.seq > seq) for (const [sid, d] of Object.entries(r.counters)) add(sid, d);
    for (const [sid, d] of journal.pending) add(sid, d);
    return moved;
  };
  /** The last share taken per key, with the report seq its grant was measured at. */
  const accepted = new Map<string, { sh: WireShare; seq: number }>();
  /** Grants this node gave back (key: the generation released, when it last asked). */
  const released = new Map<string, { gen: number; at: number }>();
  /** Since when each key has had no open connection and no unreported bytes here. */
  const idleSince = new Map<string, number>();
  /** A share as the data plane takes it: what the grant leaves now (Infinity: no cap that way). */
  const shareNow = (key: string, sh: WireShare, seq: number) => {
    const [customer, client] = key.split('\u0000');
    const moved = movedAfter(seq, customer, client ?? null);
    return {
      left: { up: sh.left.up === null ? Infinity : sh.left.up - moved.up, down: sh.left.down === null ? Infinity : sh.left.down - moved.down },
      final: { up: !!sh.final.up, down: !!sh.final.down },
      rateShare: typeof sh.rate === 'number' && sh.rate > 0 && sh.rate <= 1 ? sh.rate : 1,
    };
  };
  const setShare = (key: string, share: ReturnType<typeof shareNow> | null) => {
    const [customer, client] = key.split('\u0000');
    dataPlane.setClusterShare?.(customer, client ?? null, share);
  };
  const applyShares = (shares: NonNullable<NodeState['shares']>, seq: number) => {
    const keys = new Set(Object.keys(shares));
    for (const key of sharedKeys) {
      if (keys.has(key)) continue;
      accepted.delete(key);
      idleSince.delete(key);
      released.delete(key);
      setShare(key, null);
    }
    sharedKeys = keys;
    for (const [key, sh] of Object.entries(shares)) {
      // A share measured before this node's release still counts what it gave back: the node
      // keeps what it kept until a share of the new generation comes.
      const rel = released.get(key);
      if (rel && (sh.gen ?? 0) <= rel.gen) continue;
      released.delete(key);
      accepted.set(key, { sh, seq });
      setShare(key, shareNow(key, sh, seq));
    }
  };
  /**
   * Gives back grants this node does not use: a key with no open connection and nothing
   * unreported here for RELEASE_IDLE_MS, all reports acknowledged (so the control plane's `used`
   * counts every byte), holding over twice KEEP_IDLE, keeps KEEP_IDLE and releases the rest.
   * A release not yet seen in a share is asked again (a lost message, a reconnection).
   */
  const releaseIdle = (now: number) => {
    if (!ws || !connected || !greeted) return;
    const busy = new Set<string>();
    for (const [sid, o] of owners) {
      if (dataPlane.live(sid)?.status !== 'active' && !journal.pending.has(sid)) continue;
      busy.add(o.customer);
      busy.add(`${o.customer}\u0000${o.client}`);
    }
    for (const [key, rel] of released) {
      if (now - rel.at < RELEASE_RETRY_MS) continue;
      rel.at = now;
      ws.send(JSON.stringify({ type: 'release', key, gen: rel.gen }));
    }
    if (journal.reports.length) return;
    for (const [key, { sh, seq }] of accepted) {
      if (busy.has(key)) {
        idleSince.delete(key);
        continue;
      }
      if (!idleSince.has(key)) idleSince.set(key, now);
      if (released.has(key) || now - idleSince.get(key)! < RELEASE_IDLE_MS) continue;
      const share = shareNow(key, sh, seq);
      const finite = (n: number) => (Number.isFinite(n) ? n : 0);
      if (finite(share.left.up) <= 2 * KEEP_IDLE && finite(share.left.down) <= 2 * KEEP_IDLE) continue;
      const gen = sh.gen ?? 0;
      ws.send(JSON.stringify({ type: 'release', key, gen }));
      released.set(key, { gen, at: now });
      setShare(key, { ...share, left: { up: Math.min(share.left.up, KEEP_IDLE), down: Math.min(share.left.down, KEEP_IDLE) } });
    }
  };
  let offlineSince = 0;
  const sharesTimer = setInterval(() => {
    // Cut off from the control plane: no grant can come; the caps hold from the last sums (as
    // without a cluster) rather than leaving a capped customer's traffic waiting.
    if (connected) offlineSince = 0;
    else if (!offlineSince) offlineSince = Date.now();
    else if (Date.now() - offlineSince >= SHARES_OFFLINE_MS && sharedKeys.size) applyShares({}, 0);
    const cutoff = Date.now() - RECENT_ACKED_MS;
    if (recentAcked.length && recentAcked[0].at < cutoff) recentAcked = recentAcked.filter((r) => r.at >= cutoff);
    releaseIdle(Date.now());
  }, 1000);

  // Central max_sessions: one claim in flight per session; answered by the channel ('claimed').
  let claimSeq = 0;
  const claims = new Map<number, (ok: boolean | null) => void>();
  const inFlight = new Map<string, Promise<void>>();
  view.claim = (sessionId, row) => {
    const running = inFlight.get(sessionId);
    if (running) return running;
    if (!ws || !connected || !greeted) return Promise.resolve(); // decided here, with the last state
    const id = ++claimSeq;
    // This node's active sessions of the client (of every client when the session is not known yet).
    const active: string[] = [];
    for (const [sid, o] of owners) if ((!row || (o.customer === row.customer_id && o.client === row.client_id)) && dataPlane.live(sid)?.status === 'active') active.push(sid);
    const p = new Promise<void>((resolve) => {
      const timer = setTimeout(() => done(null), CLAIM_TIMEOUT_MS);
      const done = (ok: boolean | null) => {
        clearTimeout(timer);
        claims.delete(id);
        inFlight.delete(sessionId);
        if (ok === false) view.refusals.set(sessionId, 'max_sessions');
        resolve();
      };
      claims.set(id, done);
    });
    inFlight.set(sessionId, p);
    ws.send(JSON.stringify({ type: 'claim', id, session: sessionId, active }));
    return p;
  };

  // Reports
  let ws: WebSocket | null = null;
  let connected = false;
  /** Reports are sent once the control plane said which seq it applied last (its hello ack). */
  let greeted = false;
  /** What this node's relay carried for other entries since the last report (not resent if lost). */
  const relayed = () => {
    const carried = relay?.takeCarried() ?? {};
    return Object.keys(carried).length ? { relayed: carried } : {};
  };
  /** The highest seq sent on this channel (reports above it are sent next, in order). */
  let sentUpTo = 0;
  /** Sends the unacknowledged reports not yet sent on this channel, at most SEND_WINDOW outstanding; whether it sent any. */
  const pump = (): boolean => {
    if (!ws || !connected || !greeted) return false;
    let outstanding = 0;
    let sent = false;
    for (const r of journal.reports) {
      if (r.seq <= sentUpTo) {
        outstanding++;
        continue;
      }
      if (outstanding >= SEND_WINDOW) break;
      ws.send(JSON.stringify({ type: 'report', seq: r.seq, ports, open: dataPlane.openByZone?.() ?? [], counters: r.counters, events: r.events.map(({ at: _at, ...e }) => e), ...relayed() }));
      sentUpTo = r.seq;
      outstanding++;
      sent = true;
    }
    return sent;
  };
  /**
   * Reports are sealed only while they can be sent (connected, greeted: the seq numbering is
   * settled) and while few wait for an acknowledgement; otherwise what is counted stays pending
   * in the journal, merged per session.
   */
  const tick = () => {
    if (!ws || !connected) return;
    for (let i = 0; greeted && i < MAX_REPORTS_PER_TICK && journal.reports.length < SEND_WINDOW; i++) if (!journal.seal()) break;
    if (!pump()) ws.send(JSON.stringify({ type: 'report', seq: 0, ports, open: dataPlane.openByZone?.() ?? [], ...relayed() }));
  };
  const timer = setInterval(tick, REPORT_MS);

  // The channel: connect, fail over, back off
  let stopping = false;
  let resolveStopped!: (why: 'removed' | 'closed') => void;
  const stopped = new Promise<'removed' | 'closed'>((r) => (resolveStopped = r));
  let attempt = 0;
  let backoff = BACKOFF_MIN_MS;
  let retry: NodeJS.Timeout | null = null;
  const ca = opts.controlCa;

  const pin = opts.controlPin?.replace(/:/g, '').toLowerCase();
  const scheduleRetry = () => {
    if (stopping) return;
    // Trying the next URL at once after a failure, then waiting once all were tried.
    const wait = attempt % opts.controls.length === 0 ? backoff : 0;
    if (wait) backoff = Math.min(BACKOFF_MAX_MS, backoff * 2);
    retry = setTimeout(connect, wait);
  };

  const connect = () => {
    if (stopping) return;
    const url = channelUrl(opts.controls[attempt % opts.controls.length]);
    attempt++;
    if (pin && url.startsWith('wss:')) {
      // The pin is checked on a TLS connection of our own before the upgrade (and the token) goes out.
      pinnedTls(new URL(url), pin).then(
        (tls) => open(url, () => tls),
        (err: Error) => {
          log.warn({ control: new URL(url).host, err: err.message }, 'the control plane could not be verified');
          scheduleRetry();
        },
      );
      return;
    }
    open(url);
  };

  const open = (url: string, createConnection?: () => TLSSocket) => {
    if (stopping) return;
    const sock = new WebSocket(url, { headers: { authorization: `Bearer ${opts.token}` }, handshakeTimeout: 5000, ...(ca ? { ca } : {}), ...(createConnection ? { createConnection } : {}) });
    ws = sock;
    sock.on('open', () => {
      connected = true;
      greeted = false;
      backoff = BACKOFF_MIN_MS;
      log.info({ control: new URL(url).host }, 'connected to the control plane');
      sock.send(JSON.stringify({ type: 'report', seq: 0, ports, boot: bootId, boot_seq: bootSeq ?? journal.lastSeq }));
    });
    sock.on('message', (raw) => {
      let msg: { type?: string; seq?: number; hello?: boolean } & Partial<NodeState>;
      try {
        msg = JSON.parse(String(raw));
      } catch {
        return;
      }
      if (msg.type === 'state') {
        bootSeq ??= journal.lastSeq;
        applyState(msg as NodeState);
      }
      else if (msg.type === 'claimed') {
        const m = msg as { id?: number; ok?: unknown; session?: unknown; row?: SessionRow | null; limits?: NodeState['limits'][string] };
        const done = claims.get(m.id ?? -1);
        if (!done) return;
        if (typeof m.session === 'string') {
          view.freshen(m.session, m.row, m.limits);
          if (m.row) owners.set(m.row.id, { customer: m.row.customer_id, client: m.row.client_id });
        }
        // Not placed here (row null): refused as unknown, no max_sessions refusal to keep.
        done(m.row === null ? null : m.ok === true);
      }
      else if (msg.type === 'ack' && typeof msg.seq === 'number' && Number.isSafeInteger(msg.seq)) {
        if (msg.seq > journal.lastSeq) {
          // The control plane applied seqs this node never issued (its data folder was lost):
          // what it holds was not applied; renumber it after the control plane's last.
          journal.renumberAfter(msg.seq);
          recentAcked = [];
        }
        const at = Date.now();
        for (const r of journal.ack(msg.seq)) recentAcked.push({ ...r, at });
        if (msg.hello) {
          greeted = true;
          sentUpTo = msg.seq;
        }
        pump();
      } else if (msg.type === 'removed') {
        log.warn({}, 'this node was removed from the control plane\'s catalogue; stopping');
        void shutdown('removed');
      }
    });
    sock.on('unexpected-response', (_req, res) => {
      log.warn({ control: new URL(url).host, status: res.statusCode }, 'the control plane refused the node channel');
      sock.terminate();
    });
    sock.on('error', (err) => log.warn({ control: new URL(url).host, err: err.message }, 'node channel error'));
    sock.on('close', () => {
      if (ws === sock) {
        ws = null;
        connected = false;
      }
      scheduleRetry();
    });
  };

  const shutdown = async (why: 'removed' | 'closed') => {
    if (stopping) return;
    stopping = true;
    if (retry) clearTimeout(retry);
    await dataPlane.close();
    clearInterval(timer);
    clearInterval(sharesTimer);
    for (const done of [...claims.values()]) done(null);
    // The data plane's last counters: into a report that the next run sends.
    tick();
    if (ws) {
      const sock = ws;
      // A moment for the last report to be acknowledged.
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 500);
        sock.once('close', () => {
          clearTimeout(t);
          resolve();
        });
        if (why === 'removed' || journal.reports.length === 0) {
          clearTimeout(t);
          resolve();
        }
      });
      sock.close();
    }
    await new Promise<void>((resolve) => http.close(() => resolve()));
    http.closeAllConnections();
    await relay?.shutdown();
    tls.close();
    journal.close();
    resolveStopped(why);
  };

  connect();
  return { ports, stopped, close: () => shutdown('closed') };
}

/** Reports an older node kept in node-reports.json (before the journal): taken over once, then the file goes. */
function importLegacyReports(file: string, journal: CounterJournal, log: Logger): void {
  let saved: { reports?: Report[] };
  try {
    saved = JSON.parse(readFileSync(file, 'utf8')) as { reports?: Report[] };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn({ err: String(err) }, 'the saved node reports could not be read; starting without them');
    return;
  }
  journal.adopt(saved.reports ?? []);
  rmSync(file, { force: true });
}
