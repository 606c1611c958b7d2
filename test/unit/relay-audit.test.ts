// The control plane's comparison of what exits carried for an entry node's sessions with what
// that entry counted on them (server/cluster/relay-audit.ts): carried bytes are compared ten
// seconds late, per session hash, with slack; markedly more than counted is logged once a minute
// and shown as a metric. A session hash the entry never counted is all excess.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { RelayAudit } from '../../server/cluster/relay-audit.ts';
import { sessionTag } from '../../server/dataplane/relay-grant.ts';
import { createLogger } from '../../server/log.ts';

const MiB = 1024 * 1024;
const T0 = Date.now() - 120_000;

function audit() {
  const lines: string[] = [];
  const registry = new Registry();
  const a = new RelayAudit(createLogger({ level: 'warn', write: (l) => lines.push(l) }), registry);
  const unreported = async (entry = 'entry-1') => (await registry.getSingleMetric('vad_relay_unreported_bytes')!.get()).values.find((v) => v.labels.entry === entry)?.value;
  return { a, lines, unreported };
}
/** An exit's `relayed` for entry-1: bytes by session id (hashed as the exit sees them). */
const relayed = (bySession: Record<string, number>, entry = 'entry-1') => ({ [entry]: Object.fromEntries(Object.entries(bySession).map(([id, n]) => [sessionTag(id), { up: n / 2, down: n / 2 }])) });

test('an entry that counted on its sessions what the exits carried for them raises nothing', async () => {
  const { a, lines, unreported } = audit();
  a.counted('entry-1', [['s1', 0]], T0);
  a.carried('exit-1', relayed({ s1: 100 * MiB }), T0 + 1000);
  a.counted('entry-1', [['s1', 120 * MiB]], T0 + 20_000);
  assert.equal(lines.length, 0);
  assert.equal(await unreported(), 0);
});

test('an entry that counted markedly less on a session than the exits carried is logged and shown, once a minute', async () => {
  const { a, lines, unreported } = audit();
  a.counted('entry-1', [['s1', 1 * MiB]], T0);
  a.carried('exit-1', relayed({ s1: 100 * MiB }), T0 + 1000);
  a.counted('entry-1', [['s1', 0]], T0 + 20_000);
  assert.equal(lines.length, 1);
  assert.match(lines[0], /carried markedly more for an entry node's sessions than it counted/);
  assert.equal(await unreported(), 99 * MiB);
  a.counted('entry-1', [['s1', 0]], T0 + 40_000);
  assert.equal(lines.length, 1, 'once a minute at most');
});

test('bytes carried for a session hash the entry never counted are excess, however much else it counted', async () => {
  const { a, lines, unreported } = audit();
  a.counted('entry-1', [['s1', 500 * MiB]], T0);
  a.carried('exit-1', relayed({ 'made-up': 50 * MiB }), T0 + 1000);
  a.counted('entry-1', [['s1', 500 * MiB]], T0 + 20_000);
  assert.equal(lines.length, 1);
  assert.equal(await unreported(), 50 * MiB);
});

test('a node that reports here but never counts a byte is compared too', async () => {
  const { a, lines, unreported } = audit();
  a.carried('entry-1', undefined, T0); // its own contact reports
  a.carried('exit-1', relayed({ s1: 20 * MiB }), T0 + 1000);
  a.carried('entry-1', undefined, T0 + 20_000);
  a.carried('exit-1', {}, T0 + 20_000);
  assert.equal(await unreported(), 20 * MiB);
  a.counted('entry-1', [], T0 + 30_000);
  assert.equal(lines.length, 1);
});

test('carried bytes are compared late (the entry\'s reports lag); an entry not reporting here and junk are ignored', async () => {
  const { a, lines, unreported } = audit();
  const now = Date.now();
  a.counted('entry-1', [['s1', 0]], now - 10_000);
  a.carried('exit-1', relayed({ s1: 100 * MiB }), now);
  a.counted('entry-1', [['s1', 0]], now);
  assert.equal(lines.length, 0, 'just carried: not compared yet');
  assert.equal(await unreported(), 0);
  a.carried('exit-1', relayed({ s1: 100 * MiB }, 'elsewhere'), T0);
  assert.equal(await unreported('elsewhere'), undefined);
  a.carried('exit-1', { 'entry-1': { s: { up: 5 }, [sessionTag('x')]: { up: -5, down: 'x' } }, other: null, x: 7 } as unknown);
  a.carried('exit-1', 'nonsense');
  assert.equal(lines.length, 0);
});
