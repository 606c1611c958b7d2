// Runs Debian's pebble (Let's Encrypt's test CA) on loopback with real challenge validation:
// names resolve through our DNS responder, http-01 is checked on `httpPort` of 127.0.0.1.
// No "always valid" switch; authorizations are not reused, so every order validates again.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from '../dataplane/helpers/targets.ts';
import { startDns, type DnsResponder } from './dns.ts';
import { makeCert } from './tls.ts';
import { stopChild, tailOutput } from './child.ts';

export const PEBBLE = '/usr/bin/pebble';

export interface Pebble {
  directoryUrl: string;
  /** PEM of the certificate pebble's own HTTPS API presents (trust it to talk to the directory). */
  apiCa: string;
  managementUrl: string;
  httpPort: number;
  dns: DnsResponder;
  output(): string;
  close(): Promise<void>;
}

export async function startPebble(dir: string): Promise<Pebble> {
  if (!existsSync(PEBBLE)) throw new Error(`${PEBBLE} is missing: install Debian's pebble package`);
  const api = makeCert(dir, 'pebble-api');
  const [port, mgmt, httpPort, tlsPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const config = join(dir, 'pebble.json');
  writeFileSync(config, JSON.stringify({
    pebble: {
      listenAddress: `127.0.0.1:${port}`,
      managementListenAddress: `127.0.0.1:${mgmt}`,
      certificate: api.cert,
      privateKey: api.key,
      httpPort,
      tlsPort,
      ocspResponderURL: '',
      externalAccountBindingRequired: false,
    },
  }));
  const dns = await startDns();
  // PEBBLE_AUTHZREUSE=100: pebble always hands back a valid authorization it still holds (at 0
  // it still does so once in a hundred orders), so only a client that deactivates its
  // authorizations gets a renewal validated again.
  const proc: ChildProcess = spawn(PEBBLE, ['-config', config, '-dnsserver', `127.0.0.1:${dns.port}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '100' },
  });
  const output = tailOutput(proc, 50_000);
  const close = async () => {
    await stopChild(proc);
    await dns.close();
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (proc.exitCode !== null) {
      await close();
      throw new Error(`pebble exited: ${output()}`);
    }
    const up = await new Promise<boolean>((r) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => { s.destroy(); r(true); });
      s.once('error', () => r(false));
    });
    if (up) break;
    if (Date.now() > deadline) {
      await close();
      throw new Error(`pebble did not listen: ${output()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { directoryUrl: `https://127.0.0.1:${port}/dir`, apiCa: api.pem, managementUrl: `https://127.0.0.1:${mgmt}`, httpPort, dns, output, close };
}
