// The systemd units of deploy/systemd/: systemd-analyze verifies them (with the checkout's paths),
// every variable their environment files set is one the command reads (or the unit's ExecStart
// uses), and each ExecStart, configured by its environment file, really starts: serve from the
// environment alone, node run with the flags the unit gives it, the daily backup of serve's folder.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runUntil } from '../helpers/cli.ts';
import { removeDir, ROOT, tempDir } from '../helpers/server.ts';

const DIR = join(ROOT, 'deploy', 'systemd');
const INSTALLED = '/opt/vpn-access';

/** A unit's [Service] settings (the last of a repeated key). */
function service(unit: string): Record<string, string> {
  const text = readFileSync(join(DIR, unit), 'utf8');
  const body = text.split(/^\[Service\]$/m)[1].split(/^\[/m)[0];
  const out: Record<string, string> = {};
  for (const line of body.split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (m) out[m[1]] = m[2];
  }
  return out;
}

/** An environment file's variables; `commented` adds the `#VPN_ACCESS_X=` examples too. */
function envFile(file: string, commented = false): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(join(DIR, file), 'utf8').split('\n')) {
    const m = (commented ? /^#?(VPN_ACCESS_[A-Z_]+)=(.*)$/ : /^(VPN_ACCESS_[A-Z_]+)=(.*)$/).exec(line);
    if (m) out[m[1]] = m[2];
  }
  return out;
}

/** The VPN_ACCESS_ variables the command line reads (server/cli.ts and server/cli/). */
function variablesRead(): Set<string> {
  const files = [join(ROOT, 'server', 'cli.ts'), ...readdirSync(join(ROOT, 'server', 'cli')).map((f) => join(ROOT, 'server', 'cli', f))];
  const names = new Set<string>();
  for (const f of files) for (const m of readFileSync(f, 'utf8').matchAll(/\benv\.(VPN_ACCESS_[A-Z_]+)/g)) names.add(m[1]);
  return names;
}

/** ExecStart as an argv in this checkout, its ${VARIABLES} from `env`, as systemd expands them. */
function execStart(unit: string, env: Record<string, string>): string[] {
  return service(unit)
    .ExecStart.split(/\s+/)
    .map((w) => w.replaceAll(INSTALLED, ROOT).replace(/\$\{([A-Z_]+)\}/g, (_x, k: string) => env[k] ?? assert.fail(`${unit}: \${${k}} is not set in its environment file`)));
}

const UNITS = [
  { unit: 'vpn-access.service', env: 'serve.env' },
  { unit: 'vpn-access-node.service', env: 'node.env' },
  { unit: 'vpn-access-backup.service', env: 'serve.env' },
];
/** Units without a command of their own. */
const TIMERS = ['vpn-access-backup.timer'];

test('each environment file sets only variables its command reads or its ExecStart uses', () => {
  const read = variablesRead();
  for (const { unit, env } of UNITS) {
    const s = service(unit);
    assert.equal(s.EnvironmentFile, `/etc/vpn-access/${env}`);
    const used = new Set([...s.ExecStart.matchAll(/\$\{([A-Z_]+)\}/g)].map((m) => m[1]));
    for (const name of Object.keys(envFile(env, true))) assert.ok(read.has(name) || used.has(name), `${env}: ${name} is read by nothing`);
    const [node, launcher] = execStart(unit, envFile(env));
    accessSync(node, constants.X_OK);
    accessSync(launcher, constants.R_OK);
  }
});

test('systemd-analyze verifies every unit', (t) => {
  if (spawnSync('systemd-analyze', ['--version']).error) return t.skip('systemd-analyze is not installed (Debian package systemd; .ci/run installs it)');
  const dir = tempDir('vad-units-');
  try {
    const units = [...UNITS.map((u) => u.unit), ...TIMERS];
    for (const unit of units) {
      const text = readFileSync(join(DIR, unit), 'utf8').replaceAll(INSTALLED, ROOT).replaceAll('/etc/vpn-access/', `${DIR}/`);
      writeFileSync(join(dir, unit), text);
    }
    const r = spawnSync('systemd-analyze', ['verify', ...units.map((u) => join(dir, u))], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr.trim(), '', 'no warning either');
  } finally {
    removeDir(dir);
  }
});

test('the units\' commands start as configured: serve from serve.env alone, node run from its flags', async () => {
  const dir = tempDir('vad-unit-run-');
  try {
    // serve.env, with what only a real host has replaced: this machine's loopback, free ports, no ACME.
    const serveEnv = { ...envFile('serve.env'), VPN_ACCESS_DATA_DIR: join(dir, 'serve'), VPN_ACCESS_HOST: '127.0.0.1', VPN_ACCESS_PUBLIC_HOST: '127.0.0.1', VPN_ACCESS_PORT: '0', VPN_ACCESS_VLESS_TCP_PORT: '0', VPN_ACCESS_PROXY_PORT: '0' };
    delete (serveEnv as Record<string, string>).VPN_ACCESS_ACME_DOMAIN;
    delete (serveEnv as Record<string, string>).VPN_ACCESS_ACME_EMAIL;
    const served = await runUntil(execStart('vpn-access.service', serveEnv), serveEnv, /"msg":"listening: API https:\/\/127\.0\.0\.1:\d+\/v2/);
    for (const line of served.stdout.trim().split('\n')) JSON.parse(line); // LOG_FORMAT=json: stdout is JSON lines only
    assert.match(served.stderr, /owner token/, 'the first start\'s token on stderr, out of the shipped log');

    const nodeEnv = { ...envFile('node.env'), VPN_ACCESS_CONTROL: 'http://127.0.0.1:9', VPN_ACCESS_NODE_HOST: '127.0.0.1' };
    mkdirSync(join(dir, 'node'));
    // The unit's own flags, then free ports and a folder of the test's (later flags win).
    const argv = [...execStart('vpn-access-node.service', nodeEnv), '--port', '0', '--vless-tcp-port', '0', '--proxy-port', '0', '--relay-port', '0', '--data-dir', join(dir, 'node')];
    const node = await runUntil(argv, nodeEnv, /"msg":"node listening: VLESS ws 127\.0\.0\.1:\d+/);
    for (const line of node.stdout.trim().split('\n')) JSON.parse(line);

    // The timer's backup, of the folder serve made, from serve.env, into the test's folder of backups.
    const backupArgv = execStart('vpn-access-backup.service', serveEnv).map((w) => (w === '/var/lib/vpn-access-backups' ? join(dir, 'backups') : w));
    const backup = spawnSync(backupArgv[0], backupArgv.slice(1), { env: { PATH: process.env.PATH, ...serveEnv }, encoding: 'utf8', timeout: 60_000 });
    assert.equal(backup.status, 0, backup.stderr);
    assert.match(backup.stdout, new RegExp(`^backed up ${join(dir, 'serve')} into ${join(dir, 'backups')}/vpn-access-backup-`));
    assert.equal(readdirSync(join(dir, 'backups')).length, 1);
  } finally {
    removeDir(dir);
  }
});
