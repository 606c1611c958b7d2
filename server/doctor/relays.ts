// The geo relay port of each up node, as the node reported it to the store: reachable at the
// node's public host with TLS, serving the certificate whose pin the control plane hands out.
import type { RelayNode } from '../store/repos/nodes.ts';
import { pinOf } from '../tls/certificates.ts';
import { servedCertificate } from './ports.ts';
import { type Check, fail, messageOf, pass } from './report.ts';

/** One check over every relay; null when no up node reports one (serve itself runs none). */
export async function relayCheck(relays: RelayNode[]): Promise<Check | null> {
  if (!relays.length) return null;
  const title = 'Geo relay ports';
  const good: string[] = [];
  const bad: string[] = [];
  await Promise.all(relays.map(async (r) => {
    const where = `${r.name} at ${r.public_host}:${r.relay_port}`;
    try {
      const served = pinOf(await servedCertificate(r.public_host, r.relay_port, r.public_host));
      if (served === r.relay_pcs) good.push(where);
      else bad.push(`${where} serves sha256 ${served}, not the pinned ${r.relay_pcs}`);
    } catch (err) {
      bad.push(`${where}: ${messageOf(err)}`);
    }
  }));
  if (!bad.length) return pass('port-relay', title, `reachable with the pinned certificate: ${good.sort().join('; ')}`);
  return fail('port-relay', title, `${bad.sort().join('; ')}${good.length ? `; fine: ${good.sort().join('; ')}` : ''}`,
    'check that the node runs with its --relay-port reachable at its public host (firewall, port forward), or restart it so it reports its listeners again');
}
