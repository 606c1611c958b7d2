// Runs every check of the doctor on what the caller found: the CLI from serve's options (and a
// running server's answers), GET /v2/doctor from the server's own services.
import { type NetworkInterfaceInfo, networkInterfaces } from 'node:os';
import type { EgressPolicy } from '../dataplane/egress.ts';
import { type TlsFacts, tlsChecks } from './certificate.ts';
import { clockCheck, egressCheck, publicHostCheck } from './host.ts';
import { type PortSpec, portCheck } from './ports.ts';
import { type Check, type DoctorReport, fail, messageOf, report, within } from './report.ts';
import { relayCheck } from './relays.ts';
import { clusterFromStore, databaseCheck, type DatabaseProbe, LATEST_SCHEMA } from './store.ts';
import { zonesCheck } from './zones.ts';

interface DoctorBase {
  /** The host links name, and the address serve binds. */
  publicHost: string;
  bindHost: string;
  /** The service answers: its listeners must be reachable (else they must be free to bind). */
  running: boolean;
  ports: PortSpec[];
  tls: TlsFacts;
  /** A server's HTTP Date and when it was asked, null when there is none to compare with (said so),
   *  undefined to leave the clock out (the server about itself). */
  clock?: Parameters<typeof clockCheck>[0];
  /** Checks the caller made first (such as the running service it was pointed at). */
  leading?: Check[];
  now?: number;
}

/** The setup checked here: egress policy, database, zone catalogue, this machine's addresses. */
interface SetupHere {
  serverChecks?: undefined;
  egress: EgressPolicy;
  database: DatabaseProbe;
  zonesFile?: string;
  /** This machine's addresses; default os.networkInterfaces(). */
  interfaces?: NodeJS.Dict<NetworkInterfaceInfo[]>;
}

/** The checks a running server made about its own setup (GET /v2/doctor), used instead. */
interface SetupFromServer {
  serverChecks: Check[];
}

export type DoctorInput = DoctorBase & (SetupHere | SetupFromServer);

export async function runDoctor(input: DoctorInput): Promise<DoctorReport> {
  const at = { publicHost: input.publicHost, bindHost: input.bindHost, running: input.running };
  const [ports, tls, own] = await Promise.all([
    Promise.all(input.ports.map((p) => portCheck(p, at))),
    tlsChecks(input.tls, input.ports, at, input.now),
    input.serverChecks ? ownOf(input.serverChecks) : ownChecks(input),
  ]);
  return report([
    ...(input.leading ?? []),
    ...ports,
    ...own.host,
    ...tls,
    ...own.egress,
    ...(input.clock === undefined ? [] : [clockCheck(input.clock)]),
    ...own.store,
  ]);
}

/** The checks of a service's own setup, by where the report places them. */
interface OwnChecks {
  host: Check[];
  egress: Check[];
  /** The database, the zone catalogue, the cluster and the relays. */
  store: Check[];
}

/** The checks a server made about itself (GET /v2/doctor), in this report's places. */
function ownOf(checks: Check[]): OwnChecks {
  const pick = (...ids: string[]) => ids.flatMap((id) => checks.filter((c) => c.id === id));
  return { host: pick('public-host'), egress: pick('egress'), store: pick('database', 'zones', 'cluster', 'port-relay') };
}

/** The same checks made here, from the configuration (and database) the caller found. */
async function ownChecks(input: DoctorBase & SetupHere): Promise<OwnChecks> {
  const [host, db] = await Promise.all([
    publicHostCheck(input.publicHost, input.interfaces ?? networkInterfaces()),
    databaseCheck(input.database),
  ]);
  const zones = zonesCheck(input.zonesFile);
  const cluster = zones.zones.length ? await clusterFromStore(zones.zones, input.database, db.version) : null;
  const relays = db.version === LATEST_SCHEMA ? await relaysFromStore(input.database) : null;
  return {
    host: [host],
    egress: [egressCheck(input.egress)],
    store: [db.check, zones.check, ...(cluster ? [cluster] : []), ...(relays ? [relays] : [])],
  };
}

/** The relay check, or a failure to read the relays (the cluster check then says why too). */
async function relaysFromStore(db: DatabaseProbe): Promise<Check | null> {
  try {
    return await relayCheck(await within(db.relays(), 'reading the relays'));
  } catch (err) {
    return fail('port-relay', 'Geo relay ports', `the relays cannot be read: ${messageOf(err)}`, 'fix the database check first');
  }
}
