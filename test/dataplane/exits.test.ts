// Exit selection and sticky sessions (dataplane/exits.ts) on their own, with a test clock:
// rotation, a key holding its exit, expiry by sesstime and by 60 s idle, moving when the exit
// goes (or failing with strict), customers' keys apart, the per-customer bound; a relay that could
// not be reached left out for a while, unless it is the last.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { ExitSelector, STICKY_IDLE_MS, UNREACHABLE_MS, pickExit, placeRoutes, type ExitChoice } from '../../server/dataplane/exits.ts';
import type { GeoRoute } from '../../server/dataplane/api.ts';

const relay = (node: string): GeoRoute => ({ via: 'relay', node, host: '127.0.0.1', port: 1, pcs: 'p', from: 'serve', exp: 0, key: 'k' });
const HERE: GeoRoute = { via: 'here' };
const ADDRS = ['127.0.0.1', '127.0.0.2'];

function clock() {
  let t = 1_000_000;
  return { now: () => t, add: (ms: number) => { t += ms; } };
}
const id = (c: ExitChoice) => (c.ok ? c.exit.id : c.code);

describe('exits', () => {
  test('without a session key, connections rotate over here × addresses and the relays', () => {
    const s = new ExitSelector();
    const seen = Array.from({ length: 6 }, () => id(s.pick('c1', 'US', [HERE, relay('b')], ADDRS)));
    assert.deepEqual([...seen.slice(0, 3)].sort(), ['here@127.0.0.1', 'here@127.0.0.2', 'relay:b']);
    assert.deepEqual(seen.slice(3), seen.slice(0, 3), 'round-robin');
    // A relay's slot (the node leaves from slot modulo its addresses) moves on each time it comes round.
    const slots = Array.from({ length: 6 }, () => s.pick('c1', 'NL', [relay('a'), relay('b')], [])).map((c) => (c.ok && c.exit.route.via === 'relay' ? `${c.exit.route.node}#${c.exit.route.slot}` : '?'));
    assert.deepEqual(slots, ['a#0', 'b#0', 'a#1', 'b#1', 'a#2', 'b#2']);
    assert.equal(id(s.pick('c1', 'US', [], ADDRS)), 'location_unavailable');
    assert.equal(id(s.pick('c1', 'any', [HERE], [])), 'here@any');
    assert.equal(s.size(), 0, 'no sticky state without a key');
  });
  test('a key holds its exit until sesstime, or 60 s without a connection; then it is a new session, not a move', () => {
    const c = clock();
    const s = new ExitSelector({ now: c.now, random: () => 0 });
    const routes = [HERE, relay('b'), relay('c')];
    const first = s.pick('c1', 'US', routes, ADDRS, { sessid: 'a', sesstime: 2 });
    assert.equal(id(first), 'here@127.0.0.1');
    for (let i = 0; i < 11; i++) {
      c.add(10_000);
      const again = s.pick('c1', 'US', [relay('c'), HERE, relay('b')], [...ADDRS].reverse(), { sessid: 'a', sesstime: 2 });
      assert.ok(again.ok && !again.moved);
      assert.deepEqual(again.exit, first.ok && first.exit);
    }
    c.add(10_000); // 120 s: sesstime (2 minutes) is over
    const later = s.pick('c1', 'US', [relay('b')], ADDRS, { sessid: 'a', sesstime: 2 });
    assert.ok(later.ok && !later.moved && later.exit.id === 'relay:b', 'expired: a new session');
    c.add(STICKY_IDLE_MS - 1_000);
    const held = s.pick('c1', 'US', [relay('c')], ADDRS, { sessid: 'a' });
    assert.ok(held.ok && held.moved, 'within 60 s its exit gone: it moves');
    c.add(STICKY_IDLE_MS);
    const idle = s.pick('c1', 'US', [relay('b')], ADDRS, { sessid: 'a' });
    assert.ok(idle.ok && !idle.moved && idle.exit.id === 'relay:b', '60 s without a connection: a new session');
  });
  test('a relay that could not be reached is left out for UNREACHABLE_MS, unless no other exit is left', () => {
    const c = clock();
    const s = new ExitSelector({ now: c.now, random: () => 0 });
    const NL = [relay('a'), relay('b')];
    const held = s.pick('c1', 'NL', NL, [], { sessid: 'k' });
    const strict = s.pick('c1', 'NL', NL, [], { sessid: 's', strict: true });
    assert.deepEqual([id(held), id(strict)], ['relay:a', 'relay:a']);
    s.unreachable(held.ok ? held.exit : assert.fail());
    s.unreachable({ id: 'here@any', route: HERE }); // never left out
    assert.deepEqual(Array.from({ length: 4 }, () => id(s.pick('c2', 'NL', NL, []))), ['relay:b', 'relay:b', 'relay:b', 'relay:b']);
    const moved = s.pick('c1', 'NL', NL, [], { sessid: 'k' });
    assert.ok(moved.ok && moved.moved && moved.exit.id === 'relay:b', 'a key held on it moves');
    assert.equal(id(s.pick('c1', 'NL', NL, [], { sessid: 's', strict: true })), 'sticky_exit_gone');
    assert.equal(id(s.pick('c3', 'NL', [relay('a')], [])), 'relay:a', 'the last exit of a place is still tried');
    assert.equal(id(s.pick('c3', 'US', [HERE, relay('a')], [])), 'here@any');
    c.add(UNREACHABLE_MS);
    assert.deepEqual(Array.from({ length: 2 }, () => id(s.pick('c2', 'NL', NL, []))).sort(), ['relay:a', 'relay:b'], 'back after UNREACHABLE_MS');
    const back = s.pick('c1', 'NL', NL, [], { sessid: 's', strict: true });
    assert.ok(back.ok && !back.moved && back.exit.id === 'relay:a', 'the strict key has its exit again');
  });
  test('the exit gone: the key moves (moved) or, strict, fails until its exit is back', () => {
    const c = clock();
    const s = new ExitSelector({ now: c.now, random: () => 0 });
    const a = s.pick('c1', 'DE', [relay('b'), relay('c')], [], { sessid: 'k' });
    assert.equal(id(a), 'relay:b');
    const moved = s.pick('c1', 'DE', [relay('c')], [], { sessid: 'k' });
    assert.ok(moved.ok && moved.moved && moved.exit.id === 'relay:c');
    const stays = s.pick('c1', 'DE', [relay('b'), relay('c')], [], { sessid: 'k' });
    assert.ok(stays.ok && !stays.moved && stays.exit.id === 'relay:c', 'the new exit holds');
    const st = s.pick('c1', 'DE', [relay('b'), relay('c')], [], { sessid: 'st', strict: true });
    assert.equal(id(st), 'relay:b');
    assert.equal(id(s.pick('c1', 'DE', [relay('c')], [], { sessid: 'st', strict: true })), 'sticky_exit_gone');
    const back = s.pick('c1', 'DE', [relay('c'), relay('b')], [], { sessid: 'st', strict: true });
    assert.ok(back.ok && back.exit.id === 'relay:b' && !back.moved);
    assert.ok(st.ok && back.ok && st.exit.route.via === 'relay' && back.exit.route.via === 'relay' && st.exit.route.slot === back.exit.route.slot, 'the slot (source address at the node) is kept');
  });
  test('keys are per customer, bounded (least recently used out) and swept', () => {
    const c = clock();
    const s = new ExitSelector({ now: c.now, random: () => 0, maxKeysPerCustomer: 3 });
    assert.equal(id(s.pick('c1', 'US', [HERE], ADDRS, { sessid: 'x' })), 'here@127.0.0.1');
    const other = s.pick('c2', 'US', [HERE], ['127.0.0.2'], { sessid: 'x' });
    assert.ok(other.ok && !other.moved, 'two customers\' "x" are unrelated');
    assert.equal(id(s.pick('c1', 'US', [HERE], ADDRS, { sessid: 'x' })), 'here@127.0.0.1');
    for (const k of ['k1', 'k2', 'k3']) s.pick('c1', 'US', [HERE], ADDRS, { sessid: k });
    assert.equal(s.size('c1'), 3, 'at most 3 keys');
    const x = s.pick('c1', 'US', [HERE], ['127.0.0.2'], { sessid: 'x' });
    assert.ok(x.ok && !x.moved, 'the least recently used ("x") was dropped');
    assert.equal(s.size('c2'), 1);
    c.add(STICKY_IDLE_MS + 10_001);
    s.pick('c3', 'US', [HERE], ADDRS);
    assert.equal(s.size(), 0, 'expired keys are swept');
  });
  test('placeRoutes and pickExit: untargeted leaves from here; a place takes its routes; sessid options pass through', () => {
    const geo = { route: () => relay('b'), routes: (cc: string) => (cc === 'NL' ? [relay('b'), relay('c')] : []) };
    const ctx = { geo, exits: new ExitSelector({ random: () => 0 }), egressAddresses: ADDRS };
    assert.deepEqual(placeRoutes(ctx, {}), [HERE]);
    assert.deepEqual(placeRoutes(ctx, { country: 'NL' }), [relay('b'), relay('c')]);
    assert.deepEqual(placeRoutes(ctx, { country: 'JP' }), []);
    assert.deepEqual(placeRoutes({ ...ctx, geo: { route: () => null } }, { country: 'JP' }), []);
    assert.equal(id(pickExit(ctx, 'c1', {})), 'here@127.0.0.1');
    assert.equal(id(pickExit(ctx, 'c1', { country: 'NL', sessid: 's' })), 'relay:b');
    assert.equal(ctx.exits.size('c1'), 1);
    assert.equal(id(pickExit(ctx, 'c1', { country: 'NL', sessid: 's', strict: true }, [relay('c')])), 'sticky_exit_gone');
    assert.equal(id(pickExit(ctx, 'c1', { country: 'JP' })), 'location_unavailable');
  });
});
