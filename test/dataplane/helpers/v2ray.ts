// Runs Debian's v2ray 4.34 as a VLESS client: a SOCKS inbound (and optionally a UDP
// dokodemo-door) on loopback, and a VLESS outbound built from a session `configuration`.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './targets.ts';
import { stopChild, tailOutput } from '../../helpers/child.ts';

export const V2RAY = '/usr/bin/v2ray';

export function requireV2ray(): void {
  if (!existsSync(V2RAY)) throw new Error(`${V2RAY} is missing: install Debian's v2ray package (apt-get install v2ray)`);
}

/** The `configuration` object of a session, as the API returns it. */
export interface VlessConfiguration {
  protocol?: string;
  address: string;
  port: number;
  id: string;
  encryption?: string;
  network: 'ws' | 'tcp';
  path?: string;
  security?: 'none' | 'tls';
  sni?: string;
}

/**
 * `trust`: PEM certificates the client accepts as the only roots (v2ray 4.x `usage: "verify"`,
 * system roots off, allowInsecure false). Without it, TLS is not verified (allowInsecure).
 */
export function vlessOutbound(c: VlessConfiguration, trust?: string[]): object {
  const stream: Record<string, unknown> = { network: c.network, security: c.security ?? 'none' };
  if (c.network === 'ws') stream.wsSettings = { path: c.path ?? '/vless' };
  if (c.security === 'tls' && trust) {
    stream.tlsSettings = {
      serverName: c.sni ?? c.address,
      allowInsecure: false,
      disableSystemRoot: true,
      certificates: trust.map((pem) => ({ usage: 'verify', certificate: pem.trim().split('\n') })),
    };
  } else if (c.security === 'tls') stream.tlsSettings = { serverName: c.sni ?? c.address, allowInsecure: true };
  return {
    protocol: 'vless',
    settings: { vnext: [{ address: c.address, port: c.port, users: [{ id: c.id, encryption: c.encryption ?? 'none', level: 0 }] }] },
    streamSettings: stream,
  };
}

export interface V2rayClient {
  socksPort: number;
  udpPort?: number;
  proc: ChildProcess;
  output(): string;
  close(): Promise<void>;
}

async function waitForPort(port: number, proc: ChildProcess, out: () => string, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`v2ray exited (${proc.exitCode}): ${out()}`);
    const ok = await new Promise<boolean>((r) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => { s.destroy(); r(true); });
      s.once('error', () => r(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`v2ray did not listen on ${port}: ${out()}`);
}

/** Starts v2ray with any config; `ports` are the TCP ports to wait for. */
export async function runV2ray(config: object, ports: number[]): Promise<{ proc: ChildProcess; output(): string; close(): Promise<void> }> {
  requireV2ray();
  const dir = mkdtempSync(join(tmpdir(), 'v2ray-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  const proc = spawn(V2RAY, ['-config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output = tailOutput(proc, 20_000);
  const close = async () => {
    await stopChild(proc);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const p of ports) await waitForPort(p, proc, output);
  } catch (e) {
    await close();
    throw e;
  }
  return { proc, output, close };
}

export async function startV2rayClient(c: VlessConfiguration, opts: { udpTarget?: { host: string; port: number }; trust?: string[] } = {}): Promise<V2rayClient> {
  const socksPort = await freePort();
  const inbounds: object[] = [{ tag: 'socks', listen: '127.0.0.1', port: socksPort, protocol: 'socks', settings: { auth: 'noauth', udp: false } }];
  let udpPort: number | undefined;
  if (opts.udpTarget) {
    udpPort = await freePort();
    inbounds.push({ tag: 'udp', listen: '127.0.0.1', port: udpPort, protocol: 'dokodemo-door', settings: { address: opts.udpTarget.host, port: opts.udpTarget.port, network: 'udp' } });
  }
  const config = { log: { loglevel: 'warning' }, inbounds, outbounds: [vlessOutbound(c, opts.trust)] };
  const r = await runV2ray(config, [socksPort]);
  return { socksPort, udpPort, proc: r.proc, output: r.output, close: r.close };
}

/** Runs `use` with a v2ray client for the configuration, and stops the client afterwards. */
export async function withV2rayClient<T>(c: VlessConfiguration, use: (v: V2rayClient) => Promise<T>): Promise<T> {
  const v = await startV2rayClient(c);
  try {
    return await use(v);
  } finally {
    await v.close();
  }
}

export interface CurlResult {
  code: number | null;
  body: Buffer;
  stderr: string;
  ms: number;
}

/** Runs curl (bounded by maxTime seconds) and returns the raw body. */
export function curl(args: string[], maxTime = 20): Promise<CurlResult> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    execFile('curl', ['-sS', '--max-time', String(maxTime), ...args], { encoding: 'buffer', maxBuffer: 256 << 20 }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      resolve({ code: typeof code === 'number' ? code : 1, body: stdout, stderr: stderr.toString(), ms: performance.now() - t0 });
    });
  });
}

export function curlSocks(socksPort: number, url: string, extra: string[] = [], maxTime = 20): Promise<CurlResult> {
  return curl(['--socks5-hostname', `127.0.0.1:${socksPort}`, ...extra, url], maxTime);
}
