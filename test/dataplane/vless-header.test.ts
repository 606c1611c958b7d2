// The VLESS header parser: every command and address type, split headers, hostile values.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { buildVlessHeader, parseVlessHeader, formatUuid, parseUuid, VLESS_MAX_HEADER } from '../../server/dataplane/vless-header.ts';

describe('VLESS header parser', () => {
  const id = randomUUID();
  for (const [address, type] of [['1.2.3.4', 'ipv4'], ['example.com', 'domain'], ['2001:db8::1', 'ipv6'], ['::1', 'ipv6'], ['fe80::1:2:3:4', 'ipv6']] as const) {
    test(`address type ${type}: ${address}`, () => {
      const h = buildVlessHeader({ id, command: 'tcp', port: 443, address });
      const r = parseVlessHeader(Buffer.concat([h, Buffer.from('payload')]));
      assert.equal(r.kind, 'ok');
      if (r.kind !== 'ok') return;
      assert.deepEqual(r.header, { id, command: 'tcp', port: 443, address, addressType: type });
      assert.equal(r.length, h.length);
    });
  }
  test('UDP command and addons are skipped', () => {
    const h = buildVlessHeader({ id, command: 'udp', port: 53, address: '9.9.9.9', addons: Buffer.from([0x0a, 3, 1, 2, 3]) });
    const r = parseVlessHeader(h);
    assert.equal(r.kind, 'ok');
    if (r.kind === 'ok') assert.equal(r.header.command, 'udp');
  });
  test('mux is recognised (to be refused)', () => {
    const r = parseVlessHeader(buildVlessHeader({ id, command: 'mux' }));
    assert.equal(r.kind === 'ok' && r.header.command, 'mux');
  });
  test('every strict prefix is "more"; split headers reassemble', () => {
    const h = buildVlessHeader({ id, command: 'tcp', port: 80, address: 'a-very-long-domain.example.org', addons: Buffer.alloc(40, 1) });
    for (let i = 0; i < h.length; i++) assert.equal(parseVlessHeader(h.subarray(0, i)).kind, 'more', `prefix ${i}`);
    assert.equal(parseVlessHeader(h).kind, 'ok');
  });
  test('hostile values are errors', () => {
    const good = buildVlessHeader({ id, command: 'tcp', port: 80, address: '1.2.3.4' });
    const bad = (mut: (b: Buffer) => void) => { const b = Buffer.from(good); mut(b); return parseVlessHeader(b); };
    assert.deepEqual(bad((b) => { b[0] = 1; }), { kind: 'error', reason: 'bad_version' });
    assert.deepEqual(bad((b) => { b[18] = 9; }), { kind: 'error', reason: 'bad_command' });
    assert.deepEqual(bad((b) => { b[19] = 0; b[20] = 0; }), { kind: 'error', reason: 'bad_port' });
    assert.deepEqual(bad((b) => { b[21] = 4; }), { kind: 'error', reason: 'bad_address_type' });
    const dom = (name: string) => parseVlessHeader(Buffer.concat([good.subarray(0, 21), Buffer.from([2, name.length]), Buffer.from(name, 'latin1')]));
    assert.deepEqual(dom(''), { kind: 'error', reason: 'bad_domain' });
    assert.deepEqual(dom('a b'), { kind: 'error', reason: 'bad_domain' });
    assert.deepEqual(dom('x\r\nHost: evil'), { kind: 'error', reason: 'bad_domain' });
    assert.deepEqual(dom('a..b'), { kind: 'error', reason: 'bad_domain' });
    assert.equal(dom('ok-name_1.example').kind, 'ok');
  });
  test('the longest header fits VLESS_MAX_HEADER', () => {
    const h = buildVlessHeader({ id, command: 'tcp', port: 1, address: 'a'.repeat(255), addons: Buffer.alloc(255) });
    assert.equal(h.length, VLESS_MAX_HEADER);
    assert.equal(parseVlessHeader(h).kind, 'ok');
  });
  test('uuid round trip', () => {
    assert.equal(formatUuid(parseUuid(id)!), id);
    assert.equal(parseUuid('nope'), undefined);
  });
});
