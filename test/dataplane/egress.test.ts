// Egress policy: the default ('public-only') refuses loopback, link-local (cloud metadata),
// private and other non-global destinations in every IPv4 and IPv6 form; 'lan' adds the private
// ranges but never loopback or link-local; 'allow-all' is an explicit opt-in. Properties over
// address ranges (every encoding of a forbidden IPv4 address is refused), and the real proxy,
// VLESS TCP and VLESS UDP refusing 127.0.0.1 with the default configuration.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { createSocket } from 'node:dgram';
import fc from 'fast-check';
import { allowedBy, classifyAddress, isNonPublicAddress, resolveDestination } from '../../server/dataplane/egress.ts';
import { startHarness } from './helpers/harness.ts';
import { startFileServer } from './helpers/targets.ts';
import { curl } from './helpers/v2ray.ts';
import { buildVlessHeader } from '../../server/dataplane/vless-header.ts';

const hex = (a: number, b: number) => ((a << 8) | b).toString(16);

/** Every IPv6 spelling that carries the IPv4 address a.b.c.d (as Node accepts them). */
function encodings(q: number[]): string[] {
  const d = q.join('.');
  const [h1, h2] = [hex(q[0], q[1]), hex(q[2], q[3])];
  return [
    d,
    `::ffff:${d}`, `::ffff:${h1}:${h2}`, `0:0:0:0:0:ffff:${h1}:${h2}`, // mapped
    `::${d}`, `::${h1}:${h2}`, // compatible (so ::7f00:1)
    `::ffff:0:${d}`, `::ffff:0:${h1}:${h2}`, // translated
    `64:ff9b::${d}`, `64:ff9b::${h1}:${h2}`, // NAT64 well-known prefix
    `2002:${h1}:${h2}::`, `2002:${h1}:${h2}::1`, `2002:${h1}:${h2}:ffff::${h2}`, // 6to4
  ];
}

const octet = fc.integer({ min: 0, max: 255 });
/** Addresses inside an IPv4 subnet. */
const inV4 = (net: number[], bits: number) =>
  fc.tuple(octet, octet, octet, octet).map((r) => {
    const base = ((net[0] << 24) | (net[1] << 16) | (net[2] << 8) | net[3]) >>> 0;
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    const rnd = ((r[0] << 24) | (r[1] << 16) | (r[2] << 8) | r[3]) >>> 0;
    const v = ((base & mask) | (rnd & ~mask)) >>> 0;
    return [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255];
  });
const FORBIDDEN_V4 = fc.oneof(
  inV4([127, 0, 0, 0], 8), inV4([169, 254, 0, 0], 16), inV4([0, 0, 0, 0], 8), inV4([100, 64, 0, 0], 10),
  inV4([224, 0, 0, 0], 4), inV4([240, 0, 0, 0], 4), inV4([192, 0, 2, 0], 24), inV4([198, 18, 0, 0], 15),
);
const PRIVATE_V4 = fc.oneof(inV4([10, 0, 0, 0], 8), inV4([172, 16, 0, 0], 12), inV4([192, 168, 0, 0], 16));
const group = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));
/** IPv6 addresses inside a prefix given by its leading groups and the bits fixed in the next one. */
const inV6 = (lead: number[], nextMask = 0) =>
  fc.array(group, { minLength: 8 - lead.length, maxLength: 8 - lead.length }).map((rest) => {
    const g = [...lead.map((x) => x.toString(16)), ...rest];
    if (nextMask) g[lead.length - 1] = ((lead[lead.length - 1] & nextMask) | (parseInt(rest[0], 16) & ~nextMask & 0xffff)).toString(16);
    return g.join(':');
  });

describe('egress ranges', () => {
  test('the known gaps are closed in public-only and lan', () => {
    for (const ip of ['::7f00:1', '::127.0.0.1', '::ffff:0:127.0.0.1', '::ffff:0:a9fe:a9fe', '2002:7f00:1::', '2002:a9fe:a9fe::1',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001::1', '64:ff9b::127.0.0.1', '64:ff9b::a9fe:a9fe',
      '64:ff9b:1::8.8.8.8', '64:ff9b:1::1', 'fe80::1', 'fe80::1%lo', 'ff02::1', '::', '::1', '169.254.169.254', '127.0.0.1', '0.0.0.0',
      '3fff::1', '2001:db8::1', '100::1', '5f00::1', 'fec0::1', '255.255.255.255']) {
      assert.equal(allowedBy('public-only', ip), false, `public-only ${ip}`);
      assert.equal(allowedBy('lan', ip), false, `lan ${ip}`);
      assert.equal(allowedBy('allow-all', ip), true, `allow-all ${ip}`);
    }
    for (const ip of ['10.0.0.1', '192.168.1.10', '172.20.0.1', 'fd00::1', 'fc00::1', '::ffff:10.0.0.1', '64:ff9b::10.1.2.3', '2002:c0a8:101::1']) {
      assert.equal(allowedBy('public-only', ip), false, `public-only ${ip}`);
      assert.equal(allowedBy('lan', ip), true, `lan ${ip}`);
    }
    for (const ip of ['8.8.8.8', '1.1.1.1', '2606:4700::1111', '2a00:1450:4001:81a::200e', '::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '2002:808:808::1']) {
      assert.equal(allowedBy('public-only', ip), true, ip);
      assert.equal(allowedBy('lan', ip), true, ip);
    }
  });

  test('property: every encoding of a forbidden IPv4 address is refused by public-only and lan', () => {
    fc.assert(fc.property(FORBIDDEN_V4, (q) => {
      for (const ip of encodings(q)) {
        assert.equal(classifyAddress(ip), 'forbidden', ip);
        assert.equal(allowedBy('public-only', ip), false, ip);
        assert.equal(allowedBy('lan', ip), false, ip);
      }
    }), { numRuns: 2000 });
  });

  test('property: every encoding of a private IPv4 address is refused by public-only, allowed by lan', () => {
    fc.assert(fc.property(PRIVATE_V4, (q) => {
      for (const ip of encodings(q)) {
        assert.equal(allowedBy('public-only', ip), false, ip);
        // The deprecated compatible form (::a.b.c.d) is refused whatever it carries.
        assert.equal(allowedBy('lan', ip), !/^::[0-9a-f]+[:.]/.test(ip) || ip.startsWith('::ffff:'), ip);
      }
    }), { numRuns: 1000 });
  });

  test('property: non-global IPv6 ranges are refused by public-only (and all but ULA by lan)', () => {
    const never = fc.oneof(
      inV6([0xfe80], 0xffc0), inV6([0xff00], 0xff00), inV6([0x2001, 0]), inV6([0x64, 0xff9b, 1]), inV6([0x2001, 0xdb8]),
      inV6([0xfec0], 0xffc0), inV6([0x3fff, 0], 0xf000), inV6([0, 0, 0, 0, 0, 0]), inV6([0x100, 0, 0, 0]),
    );
    fc.assert(fc.property(never, (ip) => {
      assert.equal(allowedBy('public-only', ip), false, ip);
      assert.equal(allowedBy('lan', ip), false, ip);
    }), { numRuns: 2000 });
    fc.assert(fc.property(inV6([0xfc00], 0xfe00), (ip) => {
      assert.equal(allowedBy('public-only', ip), false, ip);
      assert.equal(allowedBy('lan', ip), true, ip);
    }), { numRuns: 500 });
  });

  test('names are resolved and the resolved address is checked (localhost refused, allow-all explicit)', async () => {
    await assert.rejects(resolveDestination('localhost', 'public-only'), /not allowed/);
    await assert.rejects(resolveDestination('localhost', 'lan'), /not allowed/);
    await assert.rejects(resolveDestination('127.1', 'lan'), /not allowed/);
    assert.equal((await resolveDestination('127.0.0.1', 'allow-all')).address, '127.0.0.1');
  });
});

test('the default configuration refuses 127.0.0.1 over the proxy, VLESS TCP and VLESS UDP, and never connects', async () => {
  // egress left out: the data plane's default applies.
  const h = await startHarness({ egress: undefined });
  const files = await startFileServer({ small: 1000 });
  const udp = createSocket('udp4');
  let udpSeen = 0;
  udp.on('message', () => udpSeen++);
  await new Promise<void>((r) => udp.bind(0, '127.0.0.1', () => r()));
  try {
    const id = h.mem.createSession({ reusable: true });
    const r = await curl(['-D', '-', '-x', `http://${id}:${id}@127.0.0.1:${h.proxyPort}`, files.url('/file/small')]);
    assert.match(r.body.toString(), /^HTTP\/1\.1 403[\s\S]*destination_forbidden/);
    const tunnel = await curl(['-D', '-', '-p', '-x', `http://${id}:${id}@127.0.0.1:${h.proxyPort}`, files.url('/file/small')]);
    assert.match(tunnel.body.toString(), /^HTTP\/1\.1 403/);
    for (const [command, port, payload] of [
      ['tcp', files.port, Buffer.from('GET /file/small HTTP/1.0\r\n\r\n')],
      ['udp', udp.address().port, Buffer.from([0, 4, 1, 2, 3, 4])],
    ] as const) {
      const sock = connect(h.vlessTcpPort, '127.0.0.1');
      const got: Buffer[] = [];
      sock.on('data', (b) => got.push(b));
      sock.on('error', () => {});
      sock.write(Buffer.concat([buildVlessHeader({ id, command, port, address: '127.0.0.1' }), payload]));
      await new Promise((res) => sock.once('close', res));
      assert.equal(Buffer.concat(got).length, 0, `${command}: no VLESS response header`);
    }
    await new Promise((res) => setTimeout(res, 100));
    assert.equal(files.sockets.length + files.open.size, 0, 'the loopback TCP target saw no connection');
    assert.equal(udpSeen, 0, 'the loopback UDP target saw no datagram');
  } finally {
    udp.close();
    await files.close();
    await h.close();
  }
});

test('the command line takes --egress public-only|lan|allow-all and refuses anything else', async () => {
  const { serve } = await import('../helpers/cli.ts');
  const { removeDir, tempDir } = await import('../helpers/server.ts');
  const dir = tempDir('vad-egress-');
  try {
    await assert.rejects(serve(dir, ['--egress', 'everything']), /exited early[\s\S]*--egress takes public-only, lan or allow-all/);
    const lan = await serve(dir, ['--quiet', '--egress', 'lan']);
    lan.kill('SIGTERM');
    assert.equal((await lan.exited).code, 0);
  } finally {
    removeDir(dir);
  }
});

describe('egress policy: the non-public addresses and name resolution', () => {
  test('non-public addresses', () => {
    for (const ip of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
      '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', 'ff02::1']) {
      assert.equal(isNonPublicAddress(ip), true, ip);
    }
    for (const ip of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '100.128.0.1']) {
      assert.equal(isNonPublicAddress(ip), false, ip);
    }
  });
  test('public-only resolves names before checking (localhost is refused)', async () => {
    await assert.rejects(resolveDestination('localhost', 'public-only'), /not allowed/);
    await assert.rejects(resolveDestination('127.0.0.1', 'public-only'), /not allowed/);
    await assert.rejects(resolveDestination('[::1]'.slice(1, -1), 'public-only'), /not allowed/);
    assert.deepEqual(await resolveDestination('127.0.0.1', 'allow-all'), { address: '127.0.0.1', family: 4 });
    assert.deepEqual(await resolveDestination('8.8.8.8', 'public-only'), { address: '8.8.8.8', family: 4 });
  });
});
