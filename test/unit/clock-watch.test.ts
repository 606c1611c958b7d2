// The node's clock against the control plane's (server/node/clock-watch.ts), with both clocks in
// the test's hand: a ping late in transit never looks like a clock off; 10 s behind is a warning,
// once; back in step is said once; 90 s ahead (past the relay grants' 60 s) is an error; a payload
// that is not a time is ignored. The estimate the node reports, to the second, follows.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClockWatch } from '../../server/node/clock-watch.ts';
import type { Logger } from '../../server/domain.ts';

function recorder(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (obj: object | string, msg?: string) => lines.push(`${level} ${msg ?? obj}`);
  return { lines, log: { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') } };
}

test('the clock watch: late pings are not a clock off; behind warns once, back in step says so, far ahead is an error', () => {
  let local = 1_000_000;
  let offset = 0; // this node's clock less the control plane's
  const { log, lines } = recorder();
  const watch = new ClockWatch(log, () => local);
  const ping = (lateMs = 0) => {
    local += 1000;
    watch.observe(String(local - offset - lateMs));
  };

  // A slow uplink holds some pings for seconds: the least of the window is the clock. What the
  // node reports (skew) is unknown until the window is full, then the estimate to the second.
  for (const late of [0, 8000, 12000, 9000]) ping(late);
  assert.equal(watch.skew(), null);
  for (const late of [7000, 0, 15000]) ping(late);
  assert.deepEqual(lines, []);
  assert.equal(watch.skew(), 0);
  assert.ok(Object.is(watch.skew(), 0), 'never -0');

  offset = -10_000;
  for (let i = 0; i < 10; i++) ping(i % 3 === 0 ? 6000 : 20);
  assert.equal(lines.length, 1, lines.join('\n'));
  assert.equal(watch.skew(), -10_000);
  assert.match(lines[0], /^warn this node's clock is 10 s behind the control plane's: run NTP on both machines \(timedatectl set-ntp true\); geo relays refuse grants more than 60 s off$/);

  offset = -3000; // nearer, not yet in step: nothing new
  for (let i = 0; i < 6; i++) ping();
  assert.equal(lines.length, 1);
  offset = 0;
  for (let i = 0; i < 6; i++) ping();
  assert.equal(lines.length, 2);
  assert.match(lines[1], /^info this node's clock is back in step with the control plane's \(0 s apart\)$/);

  offset = 90_000;
  for (let i = 0; i < 6; i++) ping();
  assert.equal(lines.length, 3);
  assert.equal(watch.skew(), 90_000);
  assert.match(lines[2], /^error this node's clock is 90 s ahead of the control plane's: geo relays to and from this node refuse its grants as expired/);

  for (const junk of ['', 'abc', '-5', '1e9', '1'.repeat(40)]) watch.observe(junk);
  watch.observe(Buffer.from('not a time'));
  assert.equal(lines.length, 3);
});
