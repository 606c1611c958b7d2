// A node's claims stay within what the control plane answers: a claim beyond NODE_LIMITS.claims
// is dropped unanswered there, and the connection behind it would wait the claim's whole time-out.
// Past nine tenths of that budget the node decides at once with its last state (nothing sent),
// and claims go out again once the budget has refilled. The channel here records what would be
// sent; the rest is the node's own NodeClaims.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { NodeClaims } from '../../server/node/claims.ts';
import { NODE_LIMITS } from '../../server/cluster/node-limits.ts';

function claims() {
  const sent: Array<{ type: string; id: number; session: string }> = [];
  const channel = { connected: true, open: true, ready: true, send: (m: object) => void sent.push(m as (typeof sent)[number]) };
  const c = new NodeClaims({ channel: channel as never, owners: new Map(), dataPlane: { live: () => undefined }, view: { refusals: new Map(), freshen: () => {} } });
  return { c, sent };
}

test('a burst of first connections: claims up to nine tenths of the budget, the rest decided at once', async () => {
  const { c, sent } = claims();
  const burst = NODE_LIMITS.claims.burst * 0.9;
  const settled = new Set<number>();
  const t0 = performance.now();
  const all = Array.from({ length: burst + 100 }, (_, i) => c.claim(`s-${i}`, undefined).then(() => settled.add(i)));
  // The burst, and what the budget refilled while the loop ran (nine tenths of the rate).
  const refilled = Math.ceil(((performance.now() - t0) / 1000) * NODE_LIMITS.claims.rate * 0.9) + 1;
  await sleep(0);
  const asked = sent.length;
  assert.ok(asked >= burst && asked <= burst + refilled, `claims sent: ${asked}`);
  assert.ok(sent.every((m) => m.type === 'claim'));
  assert.equal(c.unasked, burst + 100 - asked, 'the rest decided without asking');
  // The unasked ones are settled already, the asked ones wait for their answer: each claim is one or the other.
  const askedIds = new Set(sent.map((m) => Number(m.session.slice(2))));
  assert.equal(askedIds.size, asked);
  for (let i = 0; i < burst + 100; i++) assert.notEqual(askedIds.has(i), settled.has(i), `claim ${i}`);
  for (let i = 0; i < burst; i++) assert.ok(askedIds.has(i), `claim ${i} of the burst was asked`);
  for (const m of sent.slice(0, 10)) c.answer({ id: m.id, ok: true, session: m.session, row: null });
  await sleep(0);
  assert.equal(settled.size, burst + 110 - asked, 'answered claims settle');
  // A claim of a session already waiting shares it (nothing sent, nothing spent).
  void c.claim('s-20', undefined); // one of the burst, not answered yet
  assert.equal(sent.length, asked);
  // The budget refills at nine tenths of the control plane's rate.
  await sleep(100);
  void c.claim('later', undefined);
  assert.equal(sent.length, asked + 1, 'asked again once the budget refilled');
  c.settleAll();
  await Promise.all(all);
});
