// The SOCKS5 bytes on their own (server/dataplane/socks5.ts): each parser answers 'more' for
// every strict prefix of a valid message and the message at its full length, never throws on
// arbitrary bytes, and the encoders write what RFC 1928/1929 say.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  REP, encodeAuthStatus, encodeDatagramHeader, encodeMethod, encodeReply, parseDatagram, parseGreeting, parseRequest, parseUserPass,
} from '../../server/dataplane/socks5.ts';

const prefixesAreMore = (msg: Buffer, parse: (b: Buffer) => { kind: string }) => {
  for (let i = 0; i < msg.length; i++) assert.equal(parse(msg.subarray(0, i)).kind, 'more', `prefix of ${i} bytes`);
};

test('greeting, credentials and requests: prefixes wait, full messages parse, lengths are exact', () => {
  const greeting = Buffer.from([5, 2, 0, 2]);
  prefixesAreMore(greeting, parseGreeting);
  assert.deepEqual(parseGreeting(Buffer.concat([greeting, Buffer.from([1])])), { kind: 'ok', length: 4, methods: [0, 2] });
  assert.equal(parseGreeting(Buffer.from([4, 1, 0])).kind, 'error');
  assert.equal(parseGreeting(Buffer.from([5, 0])).kind, 'error');

  const auth = Buffer.concat([Buffer.from([1, 3]), Buffer.from('abc'), Buffer.from([2]), Buffer.from('pw')]);
  prefixesAreMore(auth, parseUserPass);
  assert.deepEqual(parseUserPass(auth), { kind: 'ok', length: 8, user: 'abc', pass: 'pw' });
  assert.equal(parseUserPass(Buffer.from([5, 1, 2])).kind, 'error');
  assert.equal(parseUserPass(Buffer.from([1, 0])).kind, 'error');

  const v4 = Buffer.from([5, 1, 0, 1, 10, 1, 2, 3, 0x1f, 0x90]);
  prefixesAreMore(v4, parseRequest);
  assert.deepEqual(parseRequest(v4), { kind: 'ok', length: 10, command: 1, host: '10.1.2.3', port: 8080 });
  const name = Buffer.concat([Buffer.from([5, 3, 0, 3, 11]), Buffer.from('example.org'), Buffer.from([0, 53])]);
  prefixesAreMore(name, parseRequest);
  assert.deepEqual(parseRequest(name), { kind: 'ok', length: name.length, command: 3, host: 'example.org', port: 53 });
  const v6 = Buffer.concat([Buffer.from([5, 1, 0, 4]), Buffer.from('20010db8000000000000000000000001', 'hex'), Buffer.from([1, 187])]);
  assert.deepEqual(parseRequest(v6), { kind: 'ok', length: 22, command: 1, host: '2001:db8:0:0:0:0:0:1', port: 443 });
  assert.deepEqual(parseRequest(Buffer.from([5, 1, 0, 9, 0, 0])), { kind: 'error', reason: 'address type 9 not supported', reply: REP.addressTypeNotSupported });
  assert.equal(parseRequest(Buffer.concat([Buffer.from([5, 1, 0, 3, 3]), Buffer.from('a\nb'), Buffer.from([0, 80])])).kind, 'error');
});

test('encoders: method, auth status, replies with IPv4 / IPv6 / mapped addresses, the UDP header', () => {
  assert.deepEqual([...encodeMethod(0xff)], [5, 0xff]);
  assert.deepEqual([...encodeAuthStatus(false)], [1, 1]);
  assert.deepEqual([...encodeReply(REP.commandNotSupported)], [5, 7, 0, 1, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual([...encodeReply(REP.succeeded, { host: '::ffff:127.0.0.1', port: 1080 })], [5, 0, 0, 1, 127, 0, 0, 1, 4, 56]);
  const six = encodeReply(REP.succeeded, { host: '::1', port: 1 });
  assert.equal(six.length, 22);
  assert.equal(six[3], 4);
  assert.equal(six[19], 1);
  const d = Buffer.concat([encodeDatagramHeader({ host: '192.0.2.1', port: 53 }), Buffer.from('payload')]);
  assert.deepEqual(parseDatagram(d), { frag: 0, host: '192.0.2.1', port: 53, payload: Buffer.from('payload') });
  assert.equal(parseDatagram(Buffer.from([1, 0, 0, 1, 1, 2, 3, 4, 0, 1])), undefined, 'RSV must be zero');
});

test('no parser throws on arbitrary bytes, and none takes more than it was given', () => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 600 }), (a) => {
    const b = Buffer.from(a);
    for (const parse of [parseGreeting, parseUserPass, parseRequest]) {
      const r = parse(b) as { kind: string; length?: number };
      if (r.kind === 'ok') assert.ok(r.length! <= b.length);
    }
    parseDatagram(b);
  }), { numRuns: 2000 });
});
