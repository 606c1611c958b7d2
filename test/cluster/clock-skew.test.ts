// A node whose clock is off: the control plane's pings carry its clock, and a real `node run` whose
// clock libfaketime puts 90 s ahead logs the error (geo relays refuse its grants), naming the fix,
// while a node beside it with the machine's clock logs nothing about its clock. Both report their
// clock's skew: the store keeps it and the doctor's cluster check names the node that is off. Real
// serve (SQLite), real node processes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { startServer } from '../../server/serve.ts';
import { childEnv } from '../helpers/cli.ts';
import { clockOff } from '../helpers/faketime.ts';
import { CLI, NODE, removeDir, ROOT, tempDir, waitFor } from '../helpers/server.ts';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function nodeRun(control: string, token: string, host: string, env: Record<string, string> = {}): { output(): string } {
  const dir = tempDir('vad-clock-node-');
  const args = [CLI, 'node', 'run', '--control', control, '--host', host, '--port', '0', '--vless-tcp-port', 'off', '--proxy-port', 'off', '--relay-port', '0', '--data-dir', dir];
  const child: ChildProcess = spawn(NODE, args, { cwd: ROOT, env: { ...childEnv(), VPN_ACCESS_NODE_TOKEN: token, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (out += c));
  cleanups.push(async () => {
    if (child.exitCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    }
    removeDir(dir);
  });
  return { output: () => out };
}

test('a node 90 s ahead of the control plane logs it as an error with the fix, and the doctor names it; a node in step logs nothing about its clock', async () => {
  const dir = tempDir('vad-clock-cp-');
  const srv = await startServer({ dataDir: dir, port: 0, vlessTcpPort: null, proxyPort: null });
  cleanups.push(() => removeDir(dir), () => srv.close());
  const ahead = await srv.services.data.addNode({ name: 'ahead-1', zone: 'br-sao', public_host: '127.0.0.2' });
  const inStep = await srv.services.data.addNode({ name: 'in-step-1', zone: 'br-sao', public_host: '127.0.0.3' });
  const control = `http://127.0.0.1:${srv.apiPort}`;
  const off = nodeRun(control, ahead.token, '127.0.0.2', clockOff('+90s'));
  const ok = nodeRun(control, inStep.token, '127.0.0.3');

  await waitFor(() => /this node's clock is/.test(off.output()), 30_000, 'the node 90 s ahead to log its clock');
  assert.match(off.output(), /ERROR +this node's clock is (89|9\d)(\.\d)? s ahead of the control plane's: geo relays to and from this node refuse its grants as expired.*timedatectl set-ntp true/);
  await new Promise((r) => setTimeout(r, 1500)); // the node in step has had its window of pings, and more
  assert.match(ok.output(), /connected to the control plane/);
  assert.doesNotMatch(ok.output(), /clock/);

  // The control plane knows too: each node reports its clock's skew, to the second; the store keeps
  // it (`node list`), and the doctor's cluster check fails on the node past the grant window.
  const skews = async () => new Map((await srv.services.data.listNodes()).map((n) => [n.name, n.clock_skew_ms]));
  await waitFor(async () => (await skews()).get('ahead-1') != null && (await skews()).get('in-step-1') != null, 15_000, 'both nodes to report their clocks');
  const reported = await skews();
  assert.ok(Math.abs(reported.get('ahead-1')! - 90_000) <= 2_000, `ahead-1 reported ${reported.get('ahead-1')} ms`);
  assert.ok(Math.abs(reported.get('in-step-1')!) <= 1_000, `in-step-1 reported ${reported.get('in-step-1')} ms`);
  const { token } = await srv.services.data.createToken('default', 'owner');
  const res = await fetch(`${control}/v2/doctor`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  const cluster = ((await res.json()) as { checks: Array<{ id: string; status: string; detail: string; fix: string }> }).checks.find((c) => c.id === 'cluster')!;
  assert.equal(cluster.status, 'fail');
  assert.match(cluster.detail, /ahead-1: clock (89|9[01]) s ahead of the control plane/);
  assert.doesNotMatch(cluster.detail, /in-step-1: clock/);
  assert.match(cluster.fix, /run NTP on the nodes named/);
});
