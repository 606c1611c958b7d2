// The catalogue's data-plane nodes. A node's token is shown once; only its SHA-256 is stored,
// in another table than the API tokens and with another prefix: the two never match each
// other. Contact times are the database's clock (`{now}`), so every instance judges "up" alike.
import { randomBytes, randomUUID } from 'node:crypto';
import { isoNow } from '../../time.ts';
import { CHANNELS } from '../sql/channels.ts';
import { all, allAs, bool, getAs, marks, run, runNotifying, type Op } from '../sql/op.ts';
import { hashToken } from './tokens.ts';

export const NODE_TOKEN_PREFIX = 'vadn_';
/** A zone has active nodes when one of its nodes was in contact within this many seconds (and did not stop, nor was found lost). */
export const NODE_UP_SECONDS = 10;

export interface NodeInfo {
  id: string;
  name: string;
  zone: string;
  public_host: string;
  vless_ws_port: number | null;
  vless_tcp_port: number | null;
  proxy_port: number | null;
  token_prefix: string;
  created_at: string;
  /** ISO time of the node's last contact, null before the first. */
  last_contact: string | null;
  /** In contact within the up window (NODE_UP_SECONDS), and not stopped since. */
  up: boolean;
  /** ISO time the node said it was stopping (a clean stop: down at once); null when it has been in contact since. */
  stopped_at: string | null;
  /** Its VLESS and proxy listeners serve TLS (as it last reported). */
  tls: boolean;
  /** SHA-256 of its self-signed certificate (links' `pcs`); null for a CA-signed one or without TLS. */
  tls_pcs: string | null;
  /** Its clock less the control plane's, ms, to the second, as it last reported (node/clock-watch.ts); null before it knew. */
  clock_skew_ms: number | null;
}

/** A node's state in words (`node list`, doctor): up, stopped (a clean stop, and when) or down. */
export const nodeStateText = (n: Pick<NodeInfo, 'up' | 'stopped_at'>): string => (n.up ? 'up' : n.stopped_at ? `stopped ${n.stopped_at}` : 'down');

/** A node's clock against the control plane's, in words, as it last reported (`node list`, doctor). */
export function nodeClockText({ clock_skew_ms: skew }: Pick<NodeInfo, 'clock_skew_ms'>): string {
  if (skew === null) return 'clock not reported yet';
  if (Math.abs(skew) < 1000) return 'clock in step';
  return `clock ${Math.abs(skew) / 1000} s ${skew > 0 ? 'ahead of' : 'behind'} the control plane`;
}

/** The listener ports a node is added with and reports (touchNode). */
const PORTS = ['vless_ws_port', 'vless_tcp_port', 'proxy_port'] as const;
export type NodePorts = Partial<Pick<NodeInfo, (typeof PORTS)[number]>>;

/** What a node reports beyond its ports (setNodeFacts): its listeners' TLS, its geo relay listener, its clock. */
export type NodeFacts = Pick<NodeInfo, 'tls' | 'tls_pcs' | 'clock_skew_ms'> & { relay_port: number | null; relay_pcs: string | null };

/** An up node's geo relay listener (relayNodes). */
export type RelayNode = Pick<NodeInfo, 'id' | 'name' | 'zone' | 'public_host'> & { relay_port: number; relay_pcs: string; token_hash: string };

/** Contact within the up window, by the database clock, and neither a clean stop nor found lost since. */
export const UP_SQL = (alias: string) => `(${alias}.last_contact > {ago:${NODE_UP_SECONDS}} AND ${alias}.stopped_at IS NULL AND ${alias}.lost_at IS NULL)`;

/** The columns of a NodeInfo from the nodes table under `alias`: up computed, last contact as ISO text. */
export function nodeColumns(alias: string): string {
  const plain = (cols: string[]) => cols.map((c) => `${alias}.${c}`);
  return [
    ...plain(['id', 'name', 'zone', 'public_host', 'vless_ws_port', 'vless_tcp_port', 'proxy_port', 'token_prefix', 'created_at']),
    `{iso:${alias}.last_contact} AS last_contact`,
    `COALESCE(${UP_SQL(alias)}, FALSE) AS up`,
    `{iso:${alias}.stopped_at} AS stopped_at`,
    ...plain(['tls', 'tls_pcs', 'clock_skew_ms']),
  ].join(', ');
}

export type RawNode = Omit<NodeInfo, 'up' | 'tls'> & { up: unknown; tls: unknown };

/** The same shape, key order included (nodeColumns' order), from either database. */
export function toNode(r: RawNode): NodeInfo {
  return { ...r, up: bool(r.up), tls: bool(r.tls) };
}

const NODES_NOTICE = { channel: CHANNELS.nodes, expr: 'id' };

const nodeWhere = (column: 'id' | 'name' | 'token_hash', value: string) =>
  getAs(toNode, `SELECT ${nodeColumns('n')} FROM nodes n WHERE n.${column} = ?`, value);

/** Adds a node; returns its token in plain text, this once. Every instance hears of it. */
function* addNode(n: { name: string; zone: string; public_host: string } & NodePorts): Op<{ token: string; node: NodeInfo }> {
  const token = NODE_TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const id = randomUUID();
  yield* runNotifying(
    NODES_NOTICE,
    `INSERT INTO nodes (id, name, zone, public_host, ${PORTS.join(', ')}, token_hash, token_prefix, created_at) VALUES (${marks(10)})`,
    id,
    n.name,
    n.zone,
    n.public_host,
    ...PORTS.map((c) => n[c] ?? null),
    hashToken(token),
    token.slice(0, NODE_TOKEN_PREFIX.length + 6),
    isoNow(),
  );
  return { token, node: (yield* getNode(id))! };
}

const getNode = (id: string) => nodeWhere('id', id);
const getNodeByName = (name: string) => nodeWhere('name', name);

/** The node a node token belongs to (API tokens never match). */
function* findNodeByToken(token: string): Op<NodeInfo | undefined> {
  if (!token.startsWith(NODE_TOKEN_PREFIX)) return undefined;
  return yield* nodeWhere('token_hash', hashToken(token));
}

const listNodes = () => allAs(toNode, `SELECT ${nodeColumns('n')} FROM nodes n ORDER BY n.zone, n.name`);

/** Up nodes of a zone, the least loaded (fewest placed sessions) first. */
export const upNodes = (zone: string) => allAs(
  toNode,
  `SELECT ${nodeColumns('n')} FROM nodes n WHERE n.zone = ? AND ${UP_SQL('n')}
   ORDER BY (SELECT COUNT(*) FROM session_placements p WHERE p.node_id = n.id), n.name`,
  zone,
);

/** Records a node's geo relay listener, its listeners' TLS (certificate pins) and its clock's skew, as its reports say. */
function* setNodeFacts(id: string, f: NodeFacts): Op<void> {
  yield* run('UPDATE nodes SET relay_port = ?, relay_pcs = ?, tls = ?, tls_pcs = ?, clock_skew_ms = ? WHERE id = ?', f.relay_port, f.relay_pcs, f.tls, f.tls_pcs, f.clock_skew_ms, id);
}

/** Up nodes with a geo relay listener, with their token hash (relay grants are keyed by it). */
const relayNodes = () => all<RelayNode>(
  `SELECT n.id, n.name, n.zone, n.public_host, n.relay_port, n.relay_pcs, n.token_hash FROM nodes n
   WHERE ${UP_SQL('n')} AND n.relay_port IS NOT NULL AND n.relay_pcs IS NOT NULL ORDER BY n.name`,
);

/** Zones with at least one up node. */
const activeNodeZones = () => allAs((r: { zone: string }) => r.zone, `SELECT DISTINCT n.zone FROM nodes n WHERE ${UP_SQL('n')} ORDER BY n.zone`);

/** Records a node's contact, by the database clock (and the ports it reports): it is up, whatever it said before. */
function* touchNode(id: string, ports: NodePorts = {}): Op<boolean> {
  const sets = PORTS.map((c) => `, ${c} = CASE WHEN ? THEN ? ELSE ${c} END`).join('');
  return (yield* run(`UPDATE nodes SET last_contact = {now}, stopped_at = NULL, lost_at = NULL${sets} WHERE id = ?`, ...PORTS.flatMap((c) => [c in ports, ports[c] ?? null]), id)) > 0;
}

/**
 * A node said it is stopping (after its last report): down now, so that no new session is placed
 * on it and no proxy request relayed to it, on any instance (each reads the up nodes every second).
 */
function* nodeStopped(id: string): Op<boolean> {
  return (yield* runNotifying(NODES_NOTICE, 'UPDATE nodes SET stopped_at = {now} WHERE id = ?', id)) > 0;
}

/**
 * A node's channel ended without its stop (the node crashed, or lost its way to this instance) and
 * no instance has heard from it for `seconds` since: down now, not NODE_UP_SECONDS after its last
 * contact. False when it was in contact meanwhile (it reconnected, here or to another instance).
 */
function* nodeLost(id: string, seconds: number): Op<boolean> {
  if (!Number.isSafeInteger(seconds) || seconds < 0) throw new RangeError(`nodeLost: seconds must be a whole number, not ${seconds}`);
  return (yield* runNotifying(NODES_NOTICE, `UPDATE nodes SET lost_at = {now} WHERE id = ? AND lost_at IS NULL AND stopped_at IS NULL AND last_contact <= {ago:${seconds}}`, id)) > 0;
}

/** The last report seq applied for the node (0: none; undefined: no such node). */
const nodeReportSeq = (nodeId: string) => getAs((r: { report_seq: number }) => r.report_seq, 'SELECT report_seq FROM nodes WHERE id = ?', nodeId);

/** removeNode repairs what the node carried: it is in repair.ts (repairOps). */
export const nodeOps = {
  addNode,
  getNode,
  getNodeByName,
  findNodeByToken,
  listNodes,
  upNodes,
  setNodeFacts,
  relayNodes,
  activeNodeZones,
  touchNode,
  nodeStopped,
  nodeLost,
  nodeReportSeq,
};
