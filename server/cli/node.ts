// `vpn-access node add|list|remove` (the catalogue's data-plane nodes) and `node run` (a
// data-plane node itself: server/node/run.ts, imported only when it runs).
import { readFileSync } from 'node:fs';
import { homedir, networkInterfaces } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger } from '../log.ts';
import { nodeClockText, nodeStateText } from '../store/repos/nodes.ts';
import { clearTextReach, isWildcardHost } from '../public-host.ts';
import { egressAddressList, env, fail, HOST, logFormat, openStore, port } from './shared.ts';

const NODE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
const ZONE_CODE = /^[a-z0-9-]{2,32}$/;

const NODE_RUN_OPTIONS = {
  control: { type: 'string' },
  token: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'vless-tcp-port': { type: 'string' },
  'proxy-port': { type: 'string' },
  'relay-port': { type: 'string' },
  egress: { type: 'string' },
  'egress-address': { type: 'string' },
  'data-dir': { type: 'string' },
  'control-ca': { type: 'string' },
  'control-pin': { type: 'string' },
  tls: { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'log-format': { type: 'string' },
} as const;

type NodeRunValues = ReturnType<typeof parseArgs<{ args: string[]; options: typeof NODE_RUN_OPTIONS }>>['values'];

/** The control plane's URLs: http(s) or ws(s), TLS whenever they leave loopback. */
function controlUrls(value: string | undefined): string[] {
  const controls = (value ?? '').split(',').map((u) => u.trim()).filter(Boolean);
  if (controls.length === 0) fail('node run needs --control URL[,URL...] (the control plane\'s API address, e.g. http://10.0.0.1:8787)');
  for (const u of controls) {
    let ok = false;
    try {
      ok = ['http:', 'https:', 'ws:', 'wss:'].includes(new URL(u).protocol);
    } catch {
      /* reported below */
    }
    if (!ok) fail(`--control takes http(s):// or ws(s):// URLs, not "${u}"`);
    // The node channel carries the node token and every session's state: TLS whenever it leaves loopback.
    const url = new URL(u);
    if ((url.protocol === 'http:' || url.protocol === 'ws:') && !isLoopbackHost(url.hostname)) {
      fail(`--control ${u}: the node channel must use TLS (https://) beyond loopback; pin the control plane's certificate with --control-pin SHA256 or trust its CA with --control-ca FILE`);
    }
  }
  return controls;
}

/** TLS on the node's listeners: whether it is on, and the given certificate files. */
function listenerTls(values: NodeRunValues, host: string): { tlsOn: boolean; certFile?: string; keyFile?: string } {
  // Auto is on unless the node listens on loopback only (its clients are on other machines, and
  // current clients refuse VLESS without TLS); given files turn it on.
  const tlsMode = values.tls ?? 'auto';
  if (tlsMode !== 'auto' && tlsMode !== 'on' && tlsMode !== 'off') fail('--tls takes auto, on or off');
  const certFile = values['tls-cert'];
  const keyFile = values['tls-key'];
  if (Boolean(certFile) !== Boolean(keyFile)) fail('--tls-cert and --tls-key go together');
  if (certFile && tlsMode === 'off') fail('--tls off and --tls-cert contradict each other');
  const tlsOn = tlsMode === 'on' || Boolean(certFile) || (tlsMode === 'auto' && !isLoopbackHost(host));
  // Clear text never beyond the local network.
  if (!tlsOn && clearTextReach(host, isWildcardHost(host) ? '127.0.0.1' : host, networkInterfaces()) === 'internet') {
    fail(`refusing to run a node without TLS beyond the local network (--host ${host}); drop --tls off, or bind a loopback or private address`);
  }
  return { tlsOn, certFile, keyFile };
}

/** The node's options from its command line, checked (fails with a message on a bad one). */
function nodeRunOptions(values: NodeRunValues) {
  const controls = controlUrls(values.control);
  const controlPin = values['control-pin']?.replace(/:/g, '').toLowerCase();
  if (controlPin !== undefined && !/^[0-9a-f]{64}$/.test(controlPin)) fail('--control-pin takes the SHA-256 of the control plane\'s certificate: 64 hex digits (colons allowed), as `pcs` in its links');
  const token = values.token ?? env.VPN_ACCESS_NODE_TOKEN;
  if (!token) fail('node run needs --token NODE_TOKEN (what `node add` printed)');
  if (!token.startsWith('vadn_')) {
    fail(`--token takes a node token (vadn_..., what \`node add\` printed)${token.startsWith('vad_') ? ', not an API token (vad_...)' : ''}`);
  }
  const host = values.host ?? '127.0.0.1';
  if (!HOST.test(host)) fail(`--host takes an address, not "${host}"`);
  const { tlsOn, certFile, keyFile } = listenerTls(values, host);
  const egress = values.egress ?? 'public-only';
  if (egress !== 'public-only' && egress !== 'lan' && egress !== 'allow-all') fail('--egress takes public-only, lan or allow-all');
  const egressAddresses = egressAddressList(values['egress-address']);
  let controlCa: string | undefined;
  if (values['control-ca']) {
    try {
      controlCa = readFileSync(resolve(values['control-ca']), 'utf8');
    } catch (err) {
      fail(`--control-ca: ${(err as Error).message}`);
    }
  }
  return {
    controls,
    token,
    host,
    port: port(values.port, 8787, '--port') ?? 8787,
    vlessTcpPort: port(values['vless-tcp-port'], 8789, '--vless-tcp-port'),
    proxyPort: port(values['proxy-port'], 8788, '--proxy-port'),
    relayPort: port(values['relay-port'], 8790, '--relay-port'),
    egress: egress as 'public-only' | 'lan' | 'allow-all',
    ...(egressAddresses ? { egressAddresses } : {}),
    dataDir: resolve(values['data-dir'] ?? join(homedir(), '.local', 'share', 'vpn-access-node')),
    controlCa,
    ...(controlPin ? { controlPin } : {}),
    tls: { mode: (tlsOn ? 'on' : 'off') as 'on' | 'off', ...(certFile && keyFile ? { certFile: resolve(certFile), keyFile: resolve(keyFile) } : {}) },
  };
}

/** `node run`: a data-plane node (server/node/run.ts); runs until SIGINT/SIGTERM or its removal. */
async function nodeRun(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: NODE_RUN_OPTIONS });
  const options = nodeRunOptions(values);
  const log = createLogger({ format: logFormat(values['log-format'] ?? env.VPN_ACCESS_LOG_FORMAT) });
  const { runNode } = await import('../node/run.ts');
  const node = await runNode({ ...options, log }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'EADDRINUSE') fail(`a port is already in use (${err.message}); choose another with --port, --vless-tcp-port, --proxy-port or --relay-port`);
    throw err;
  });
  const p = node.ports;
  log.info(`node listening: VLESS ${p.tls ? 'wss' : 'ws'} ${options.host}:${p.vless_ws_port}, tcp ${p.vless_tcp_port ?? 'off'}, proxy ${p.proxy_port ?? 'off'}, geo relay ${p.relay_port ?? 'off'}; TLS ${p.tls ? `on${p.tls_pcs ? ` (self-signed, sha256 ${p.tls_pcs})` : ''}` : 'off'}`);
  const stop = () => void node.close();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const why = await node.stopped;
  log.info(why === 'removed' ? 'node removed from the catalogue; stopped' : 'node stopped');
  process.exit(0);
}

/** localhost, 127.0.0.0/8 and ::1. */
function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

export async function node(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  if (sub === 'run') return nodeRun(rest);
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      zone: { type: 'string' },
      'public-host': { type: 'string' },
      'data-dir': { type: 'string' },
      database: { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  if (sub !== 'add' && sub !== 'list' && sub !== 'remove') fail(`unknown node command "${sub ?? ''}"; use add, list, remove or run`);
  if (sub === 'add') {
    if (!values.name || !NODE_NAME.test(values.name)) fail('node add needs --name NAME (letters, digits, ".", "_", "-"; at most 63)');
    if (values.name === 'local') fail('"local" names this serve process\'s own data plane; choose another name');
    if (!values.zone || !ZONE_CODE.test(values.zone)) fail('node add needs --zone CODE (a zone code such as de-fra)');
    if (!values['public-host'] || !HOST.test(values['public-host'])) fail('node add needs --public-host HOST (a host name or address clients connect to)');
  }
  if (sub === 'remove' && !positionals[0]) fail('node remove needs the node\'s NAME');
  const store = await openStore(values, sub === 'add');
  try {
    if (sub === 'add') {
      if (await store.getNodeByName(values.name!)) fail(`a node named "${values.name}" exists already`);
      const { token } = await store.addNode({ name: values.name!, zone: values.zone!, public_host: values['public-host']! });
      // Only the token, so that scripts can capture it: `TOKEN=$(vpn-access node add ...)`.
      process.stdout.write(token + '\n');
    } else if (sub === 'list') {
      const nodes = await store.listNodes();
      if (values.json) process.stdout.write(JSON.stringify(nodes, null, 2) + '\n');
      else if (nodes.length === 0) process.stdout.write('no nodes\n');
      else
        for (const n of nodes)
          process.stdout.write(`${n.name}  ${n.zone}  ${nodeStateText(n)}  last contact ${n.last_contact ?? 'never'}  ${nodeClockText(n)}  ${n.public_host}\n`);
    } else {
      const gone = await store.removeNode(positionals[0]);
      if (!gone) fail(`no node named "${positionals[0]}"`);
      process.stdout.write(`removed node ${gone.name} (zone ${gone.zone})\n`);
    }
  } finally {
    await store.close();
  }
}
