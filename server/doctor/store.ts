// The database (reachable, its schema at this program's latest version, pending versions named)
// and the cluster (each zone's nodes up or down, with their last contact; up nodes' clocks), from the store.
import type { ControlStore } from '../store/control.ts';
import { MIGRATIONS } from '../store/migrations/index.ts';
import { GRANT_MS } from '../dataplane/relay-grant.ts';
import { nodeClockText, nodeStateText, type NodeInfo, type RelayNode } from '../store/repos/nodes.ts';
import { CLOCK_SKEW_WARN_MS } from '../time.ts';
import { type Check, type CheckStatus, fail, messageOf, pass, warn, within, worst } from './report.ts';
import type { OtherClock } from './host.ts';

/** What the checks read of a database; the CLI opens it read-only, the server passes its own store. */
export interface DatabaseProbe {
  kind: 'sqlite' | 'postgres';
  /** The file, or the URL without its password. */
  where: string;
  /** The schema version; null when there is no database yet (a data folder serve has not used). */
  schemaVersion(): Promise<number | null>;
  nodes(): Promise<NodeInfo[]>;
  /** Up nodes' geo relay listeners. */
  relays(): Promise<RelayNode[]>;
  /** PostgreSQL: its server's clock, read now (an ISO time with milliseconds). */
  clock?(): Promise<string>;
}

/** The server's own store (GET /v2/doctor). */
export function storeProbe(data: ControlStore, where: string): DatabaseProbe {
  const clock = data.kind === 'postgres' ? { clock: () => data.databaseClock() } : {};
  return { kind: data.kind, where, schemaVersion: () => data.schemaVersion(), nodes: () => data.listNodes(), relays: () => data.relayNodes(), ...clock };
}

/**
 * PostgreSQL's clock to compare this machine's with (a cluster's instances and nodes judge leases,
 * expiry and relay grants by their own clocks), `from` naming it; null when the database is
 * SQLite (one machine, one clock) or does not answer.
 */
export async function databaseClock(probe: DatabaseProbe, from: string): Promise<OtherClock | null> {
  if (!probe.clock) return null;
  const sentAt = Date.now();
  try {
    const date = await within(probe.clock(), 'reading PostgreSQL\'s clock');
    return { date, sentAt, receivedAt: Date.now(), from, resolutionMs: 1 };
  } catch {
    return null;
  }
}

export const LATEST_SCHEMA = MIGRATIONS.length;

/** The database check, and the version found (undefined when it could not be read). */
export async function databaseCheck(db: DatabaseProbe): Promise<{ check: Check; version?: number | null }> {
  const title = `Database (${db.kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'})`;
  let version: number | null;
  try {
    version = await within(db.schemaVersion(), `reading the schema of ${db.where}`);
  } catch (err) {
    const fix = db.kind === 'postgres' ? 'check that PostgreSQL runs and the URL (host, port, user, password, database) is right' : 'check the data folder\'s permissions (--data-dir)';
    return { check: fail('database', title, `${db.where} cannot be read: ${messageOf(err)}`, fix) };
  }
  if (version === null) {
    return { version, check: warn('database', title, `no database yet at ${db.where}`, 'start serve once: it creates the database and applies every migration') };
  }
  if (version > LATEST_SCHEMA) {
    return { version, check: fail('database', title, `${db.where} is at schema version ${version}, newer than this program (${LATEST_SCHEMA})`, 'upgrade vpn-access to the version that wrote this database') };
  }
  if (version < LATEST_SCHEMA) {
    const pending = Array.from({ length: LATEST_SCHEMA - version }, (_, i) => version + i + 1);
    return { version, check: warn('database', title, `${db.where} is at schema version ${version} of ${LATEST_SCHEMA}; pending migrations: ${pending.map((v) => `version ${v}`).join(', ')}`,
      'start (or restart) serve of this version: it applies the pending migrations before serving') };
  }
  return { version, check: pass('database', title, `${db.where} reachable, schema version ${version} (the latest)`) };
}

export interface ZoneNodes {
  code: string;
  /** The catalogue's node names: `local` means this serve process carries the zone. */
  catalogueNodes: string[];
  /** The catalogue's own verdict (a listed node not marked "down" is carried by this process). */
  catalogueActive: boolean;
}

const contact = (n: NodeInfo) => `${n.name} ${nodeStateText(n)}, last contact ${n.last_contact ?? 'never'}`;

/**
 * One zone's finding: served here or nodes up (pass); every node down (fail: the zone was meant
 * to carry sessions and refuses them now); no node at all (warn: the catalogue offers the zone
 * without active nodes, as the default catalogue's br-sao and au-syd, so nobody is served there by
 * design).
 */
function zoneFinding(z: ZoneNodes, nodes: NodeInfo[]): { status: CheckStatus; text: string } {
  const mine = nodes.filter((n) => n.zone === z.code);
  const up = mine.filter((n) => n.up);
  if (z.catalogueNodes.includes('local')) return { status: 'pass', text: `${z.code}: local${mine.length ? ` and ${up.length}/${mine.length} nodes up` : ''}` };
  if (up.length) return { status: 'pass', text: `${z.code}: ${up.length}/${mine.length} nodes up (${mine.map(contact).join('; ')})` };
  if (mine.length) return { status: 'fail', text: `${z.code}: every node down (${mine.map(contact).join('; ')})` };
  if (z.catalogueNodes.length && z.catalogueActive) return { status: 'pass', text: `${z.code}: catalogue nodes ${z.catalogueNodes.join(', ')} (carried here)` };
  if (z.catalogueNodes.length) return { status: 'warn', text: `${z.code}: offered with its nodes marked down in the catalogue (${z.catalogueNodes.join(', ')})` };
  return { status: 'warn', text: `${z.code}: no node (offered without active nodes: sessions there are refused)` };
}

/**
 * An up node whose clock, as it reports it, is more than CLOCK_SKEW_WARN_MS off the control
 * plane's (warn), or past GRANT_MS (fail: geo relays to and from it refuse its grants as expired).
 */
function clockFinding(n: NodeInfo): { status: CheckStatus; text: string } | null {
  const off = Math.abs(n.clock_skew_ms ?? 0);
  if (!n.up || off <= CLOCK_SKEW_WARN_MS) return null;
  return { status: off > GRANT_MS ? 'fail' : 'warn', text: `${n.name}: ${nodeClockText(n)}` };
}

const FIXES = {
  down: 'start `vpn-access node run` on the down nodes (or check their network to the control plane); sessions of those zones are refused meanwhile',
  zone: 'to serve a zone without a node: add one (vpn-access node add --zone CODE, then node run on that machine) or list "local" among its nodes; or remove the zone from the catalogue (--zones)',
  clock: `run NTP on the nodes named and on the control plane (timedatectl set-ntp true): geo relays refuse grants more than ${GRANT_MS / 1000} s off`,
};

/** Nodes up per zone, from the store (a zone's catalogue entry may also carry it locally), and their clocks. */
export function clusterCheck(zones: ZoneNodes[], nodes: NodeInfo[]): Check {
  const title = 'Cluster';
  let status: CheckStatus = 'pass';
  const problems: string[] = [];
  const fixes = new Set<string>();
  let local = 0;
  const served: string[] = [];
  for (const z of zones) {
    const f = zoneFinding(z, nodes);
    status = worst(status, f.status);
    if (f.status !== 'pass') {
      problems.push(f.text);
      fixes.add(f.text.includes('every node down') ? FIXES.down : FIXES.zone);
    } else if (z.catalogueNodes.includes('local') && !nodes.some((n) => n.zone === z.code)) local++;
    else served.push(f.text);
  }
  for (const f of nodes.map(clockFinding)) {
    if (!f) continue;
    status = worst(status, f.status);
    problems.push(f.text);
    fixes.add(FIXES.clock);
  }
  const parts = [...problems, ...served, ...(local ? [`${local} zone${local === 1 ? '' : 's'} served here (local)`] : [])];
  const detail = `${nodes.length} node${nodes.length === 1 ? '' : 's'} in the store; ${parts.join('; ')}`;
  if (status === 'pass') return pass('cluster', title, detail);
  const fix = [...fixes].join('; ');
  return status === 'fail' ? fail('cluster', title, detail, fix) : warn('cluster', title, detail, fix);
}

/** The cluster check when the store can be read at the latest schema. */
export async function clusterFromStore(zones: ZoneNodes[], db: DatabaseProbe, version: number | null | undefined): Promise<Check> {
  if (version !== LATEST_SCHEMA) {
    return warn('cluster', 'Cluster', 'not checked: the database is missing, unreadable or not at the latest schema', 'fix the database check first');
  }
  try {
    return clusterCheck(zones, await within(db.nodes(), 'reading the nodes'));
  } catch (err) {
    return fail('cluster', 'Cluster', `the nodes cannot be read: ${messageOf(err)}`, 'fix the database check first');
  }
}
