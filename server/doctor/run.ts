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

export interface DoctorInput {
  /** The host links name, and the address serve binds. */
  publicHost: string;
  bindHost: string;
  /** The service answers: its listeners must be reachable (else they must be free to bind). */
  running: boolean;
  ports: PortSpec[];
  tls: TlsFacts;
  egress: EgressPolicy;
  /** A server's HTTP Date and when it was asked, null when there is none to compare with (said so),
   *  undefined to leave the clock out (the server about itself). */
  clock?: Parameters<typeof clockCheck>[0];
  database: DatabaseProbe;
  zonesFile?: string;
  /** This machine's addresses; default os.networkInterfaces(). */
  interfaces?: NodeJS.Dict<NetworkInterfaceInfo[]>;
  /** Checks the caller made first (such as the running service it was pointed at). */
  leading?: Check[];
  now?: number;
}

export async function runDoctor(input: DoctorInput): Promise<DoctorReport> {
  const at = { publicHost: input.publicHost, bindHost: input.bindHost, running: input.running };
  const [ports, host, tls, db] = await Promise.all([
    Promise.all(input.ports.map((p) => portCheck(p, at))),
    publicHostCheck(input.publicHost, input.interfaces ?? networkInterfaces()),
    tlsChecks(input.tls, input.ports, at, input.now),
    databaseCheck(input.database),
  ]);
  const zones = zonesCheck(input.zonesFile);
  const cluster = zones.zones.length ? await clusterFromStore(zones.zones, input.database, db.version) : null;
  const relays = db.version === LATEST_SCHEMA ? await relaysFromStore(input.database) : null;
  return report([
    ...(input.leading ?? []),
    ...ports,
    host,
    ...tls,
    egressCheck(input.egress),
    ...(input.clock === undefined ? [] : [clockCheck(input.clock)]),
    db.check,
    zones.check,
    ...(cluster ? [cluster] : []),
    ...(relays ? [relays] : []),
  ]);
}

/** The relay check, or a failure to read the relays (the cluster check then says why too). */
async function relaysFromStore(db: DatabaseProbe): Promise<Check | null> {
  try {
    return await relayCheck(await within(db.relays(), 'reading the relays'));
  } catch (err) {
    return fail('port-relay', 'Geo relay ports', `the relays cannot be read: ${messageOf(err)}`, 'fix the database check first');
  }
}
