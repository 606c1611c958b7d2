// Restartable cluster processes for tests that kill them: a `vpn-access serve --database`
// control plane and a `vpn-access node run` data-plane node, each a child process on fixed
// ports and a data folder of its own, so `kill -9` and a restart on the same folder give back
// the same addresses (clients and nodes keep their URLs).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { freePort } from '../dataplane/helpers/targets.ts';
import { serve, type ServeProcess } from './cli.ts';
import { CLI, NODE, ROOT, tempDir } from './server.ts';

const childEnv = () => {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('VPN_ACCESS_') || k.startsWith('NODE_TEST')) delete env[k];
  return env;
};

/** Runs the command line to completion; throws with its error output when it fails. */
export function vpnAccess(args: string[]): string {
  const r = spawnSync(NODE, [CLI, ...args], { cwd: ROOT, env: childEnv(), encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`vpn-access ${args.slice(0, 2).join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout.trim();
}

export interface ControlPlane {
  name: string;
  port: number;
  dir: string;
  /** http://127.0.0.1:PORT/v2 */
  readonly baseUrl: string;
  readonly running: boolean;
  start(): Promise<void>;
  /** `kill -9`; resolves once the process is gone. */
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

export async function controlPlane(name: string, extra: string[]): Promise<ControlPlane> {
  const port = await freePort();
  const dir = tempDir(`vad-cp-${name}-`);
  let proc: ServeProcess | undefined;
  const halt = async (signal: NodeJS.Signals) => {
    const p = proc;
    proc = undefined;
    if (!p) return;
    p.kill(signal);
    await p.exited;
  };
  return {
    name,
    port,
    dir,
    baseUrl: `http://127.0.0.1:${port}/v2`,
    get running() {
      return proc !== undefined;
    },
    async start() {
      proc = await serve(dir, [...extra, '--port', String(port), '--quiet'], 30_000);
    },
    kill9: () => halt('SIGKILL'),
    stop: () => halt('SIGTERM'),
  };
}

export interface NodePorts {
  ws: number;
  tcp: number;
  proxy: number;
  relay: number;
}

export interface NodeProcess {
  name: string;
  zone: string;
  host: string;
  ports: NodePorts;
  dir: string;
  readonly running: boolean;
  /** The tail of the current process's output. */
  output(): string;
  start(): Promise<void>;
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

/** `node add` in the catalogue, then a node process on `host` (a 127/8 address) with fixed ports. */
export async function nodeProcess(opts: { name: string; zone: string; host: string; database: string; controls: string[] }): Promise<NodeProcess> {
  const token = vpnAccess(['node', 'add', '--name', opts.name, '--zone', opts.zone, '--public-host', opts.host, '--database', opts.database]);
  const ports: NodePorts = { ws: await freePort(), tcp: await freePort(), proxy: await freePort(), relay: await freePort() };
  const dir = tempDir(`vad-node-${opts.name}-`);
  let child: ChildProcess | undefined;
  let out = '';
  const halt = async (signal: NodeJS.Signals) => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill(signal);
    const timer = setTimeout(() => c.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(timer);
  };
  return {
    name: opts.name,
    zone: opts.zone,
    host: opts.host,
    ports,
    dir,
    get running() {
      return child !== undefined;
    },
    output: () => out,
    start() {
      out = '';
      const c = spawn(
        NODE,
        [
          CLI, 'node', 'run', '--control', opts.controls.join(','), '--host', opts.host,
          '--port', String(ports.ws), '--vless-tcp-port', String(ports.tcp), '--proxy-port', String(ports.proxy), '--relay-port', String(ports.relay),
          '--egress', 'allow-all', '--egress-address', opts.host, '--data-dir', dir,
        ],
        // The token from the environment keeps it out of `ps`.
        { cwd: ROOT, env: { ...childEnv(), VPN_ACCESS_NODE_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      child = c;
      const keep = (s: string) => (out = (out + s).slice(-20_000));
      c.stdout!.setEncoding('utf8').on('data', keep);
      c.stderr!.setEncoding('utf8').on('data', keep);
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`node ${opts.name} did not start:\n${out}`)), 30_000);
        const check = () => {
          if (!/node listening: /.test(out)) return;
          clearTimeout(timer);
          c.stdout!.off('data', check);
          resolve();
        };
        c.stdout!.on('data', check);
        c.once('exit', (code, sig) => {
          clearTimeout(timer);
          if (child === c) child = undefined;
          reject(new Error(`node ${opts.name} exited (${code ?? sig}):\n${out}`));
        });
      });
    },
    kill9: () => halt('SIGKILL'),
    stop: () => halt('SIGTERM'),
  };
}
