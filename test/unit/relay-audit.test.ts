// The control plane's comparison of what exits carried for an entry node with what that entry
// counted on its sessions (server/cluster/relay-audit.ts): carried bytes are compared ten seconds
// late and with slack; markedly more than counted is logged once a minute and shown as a metric.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { RelayAudit } from '../../server/cluster/relay-audit.ts';
import { createLogger } from '../../server/log.ts';

const MiB = 1024 * 1024;

function audit() {
  const lines: string[] = [];
  const registry = new Registry();
  const a = new RelayAudit(createLogger({ level: 'warn', write: (l) => lines.push(l) }), registry);
  const unreported = async () => (await registry.getSingleMetric('vad_relay_unreported_bytes')!.get()).values.find((v) => v.labels.entry === 'entry-1')?.value ?? 0;
  return { a, lines, unreported };
}
const carried = (bytes: number) => ({ entry: { s1: { up: bytes / 2, down: bytes / 2 } } });

test('an entry that counted what the exits carried for it raises nothing', async () => {
  const { a, lines, unreported } = audit();
  const t = Date.now() - 60_000;
  a.counted('entry-1', 0);
  a.carried('exit-1', { 'entry-1': carried(100 * MiB).entry }, t);
  a.counted('entry-1', 120 * MiB);
  assert.equal(lines.length, 0);
  assert.equal(await unreported(), 0);
});

test('an entry that counted markedly less than the exits carried for it is logged and shown', async () => {
  const { a, lines, unreported } = audit();
  const t = Date.now() - 60_000;
  a.counted('entry-1', 1 * MiB);
  a.carried('exit-1', { 'entry-1': carried(100 * MiB).entry }, t);
  a.counted('entry-1', 1 * MiB);
  assert.equal(lines.length, 1);
  assert.match(lines[0], /carried markedly more for an entry node/);
  assert.equal(await unreported(), 98 * MiB);
  // Once a minute at most.
  a.counted('entry-1', 0);
  assert.equal(lines.length, 1);
});

test('carried bytes are compared late (the entry\'s reports lag), and junk in a report is ignored', async () => {
  const { a, lines } = audit();
  a.counted('entry-1', 0);
  a.carried('exit-1', { 'entry-1': carried(100 * MiB).entry });
  a.counted('entry-1', 0);
  assert.equal(lines.length, 0, 'just carried: not compared yet');
  a.carried('exit-1', { 'entry-1': { s: { up: -5, down: 'x' } }, other: null, x: 7 } as unknown);
  a.carried('exit-1', 'nonsense');
  assert.equal(lines.length, 0);
});
