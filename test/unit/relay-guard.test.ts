// The caps on geo relay connections not yet authenticated (server/node/relay-guard.ts): the
// source a connection counts for, and slots taken and given back once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RelayGuard, sourceOf } from '../../server/node/relay-guard.ts';
import { silentLogger } from '../../server/log.ts';

test('a source is the IPv4 address (also IPv4-mapped) or the IPv6 /64', () => {
  assert.equal(sourceOf('127.0.0.1'), '127.0.0.1');
  assert.equal(sourceOf('::ffff:10.0.0.2'), '10.0.0.2');
  assert.equal(sourceOf('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(sourceOf('2001:db8:0:0:1::5'), '2001:db8:0:0::/64');
  assert.equal(sourceOf('2001:0DB8:00aa:0001:ffff::'), '2001:db8:aa:1::/64');
});

test('slots are capped in total and per source, and each is given back once', () => {
  const g = new RelayGuard(silentLogger, 3, 2);
  const a1 = g.admit('10.0.0.1')!;
  const a2 = g.admit('10.0.0.1')!;
  assert.equal(g.admit('10.0.0.1'), null, 'per source');
  assert.equal(g.admit('2001:db8::1') !== null, true);
  assert.equal(g.admit('10.0.0.9'), null, 'in total');
  a1();
  a1();
  assert.equal(g.pending, 2, 'a release counts once');
  assert.ok(g.admit('10.0.0.1'));
  a2();
});
