// The doctor's checks one by one, on real parts: certificates made by the selfsigned package and
// served by node:tls, real sockets, a real SQLite file, the zone loader and the egress policy code.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createServer as createTlsServer } from 'node:tls';
import { describe, test } from 'node:test';
import { generate } from 'selfsigned';
import { expiryCheck, namesCheck, pinCheck, type TlsFacts } from '../../server/doctor/certificate.ts';
import { clockCheck, egressCheck, publicHostCheck } from '../../server/doctor/host.ts';
import { portCheck, type PortSpec } from '../../server/doctor/ports.ts';
import { sqliteProbe } from '../../server/doctor/probes.ts';
import { relayCheck } from '../../server/doctor/relays.ts';
import { formatReport, report } from '../../server/doctor/report.ts';
import { clusterCheck, databaseCheck, LATEST_SCHEMA } from '../../server/doctor/store.ts';
import { zonesCheck } from '../../server/doctor/zones.ts';
import { DB_FILE, openDatabase } from '../../server/store/db.ts';
import type { NodeInfo } from '../../server/store/repos/nodes.ts';
import { pinOf } from '../../server/tls/certificates.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

const DAY = 86_400_000;

async function certificate(host: string, notAfter: Date): Promise<{ cert: string; key: string; x509: X509Certificate }> {
  const pems = await generate([{ name: 'commonName', value: host }], {
    keyType: 'ec', curve: 'P-256', algorithm: 'sha256', notBeforeDate: new Date(notAfter.getTime() - 400 * DAY), notAfterDate: notAfter,
    extensions: [{ name: 'subjectAltName', altNames: [/^[\d.]+$/.test(host) ? { type: 7, ip: host } : { type: 2, value: host }] }],
  });
  return { cert: pems.cert, key: pems.private, x509: new X509Certificate(pems.cert) };
}

const api = (port: number, tls = true): PortSpec => ({ id: 'api', name: 'API', option: '--port', port, tls });

describe('doctor: TLS', () => {
  test('expiry: expired fails, under 14 days warns, later passes', async () => {
    const now = Date.now();
    assert.equal(expiryCheck((await certificate('127.0.0.1', new Date(now - DAY))).x509, now).status, 'fail');
    const soon = expiryCheck((await certificate('127.0.0.1', new Date(now + 10 * DAY))).x509, now);
    assert.equal(soon.status, 'warn');
    assert.match(soon.detail, /^expires in (9|10) days/);
    assert.equal(expiryCheck((await certificate('127.0.0.1', new Date(now + 90 * DAY))).x509, now).status, 'pass');
  });

  test('names: covered passes; not covered warns when pinned and fails when verified by name', async () => {
    const { x509 } = await certificate('vpn.example.com', new Date(Date.now() + 90 * DAY));
    assert.equal(namesCheck(x509, 'vpn.example.com', false).status, 'pass');
    assert.equal(namesCheck(x509, 'other.example.com', true).status, 'warn');
    const f = namesCheck(x509, 'other.example.com', false);
    assert.equal(f.status, 'fail');
    assert.match(f.detail, /other\.example\.com is not among its names \(DNS:vpn\.example\.com\)/);
  });

  test('pin: the certificate a real TLS listener serves against the pin links carry', async () => {
    const served = await certificate('127.0.0.1', new Date(Date.now() + 90 * DAY));
    const other = await certificate('127.0.0.1', new Date(Date.now() + 90 * DAY));
    const server = createTlsServer({ cert: served.cert, key: served.key }, (s) => s.end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const facts = (pin: string): TlsFacts => ({ enabled: true, mode: 'on', reason: '', source: 'self-signed', pin, fingerprint: pin });
    try {
      const at = { publicHost: '127.0.0.1', running: true };
      const good = await pinCheck(facts(pinOf(served.x509)), [api(port)], at);
      assert.equal(good.check.status, 'pass');
      assert.equal(pinOf(good.served!), pinOf(served.x509));
      const bad = await pinCheck(facts(pinOf(other.x509)), [api(port)], at);
      assert.equal(bad.check.status, 'fail');
      assert.match(bad.check.detail, new RegExp(`port ${port} serves ${pinOf(served.x509)}`));
      // A CA-signed certificate (no pin): a different one served is a reload still due, a warning.
      const stale = await pinCheck({ ...facts(pinOf(other.x509)), pin: null }, [api(port)], at);
      assert.equal(stale.check.status, 'warn');
      assert.match(stale.check.fix, /SIGHUP/);
      // A node's geo relay: the pin it reported against what its port serves; an unreachable one named.
      const relay = (pin: string, relayPort = port) => ({ id: 'n', name: 'syd-1', zone: 'au-syd', public_host: '127.0.0.1', relay_port: relayPort, relay_pcs: pin, token_hash: 'h' });
      assert.equal((await relayCheck([]))?.status, undefined);
      assert.equal((await relayCheck([relay(pinOf(served.x509))]))!.status, 'pass');
      const wrong = (await relayCheck([relay(pinOf(other.x509))]))!;
      assert.equal(wrong.status, 'fail');
      assert.match(wrong.detail, new RegExp(`syd-1 at 127\\.0\\.0\\.1:${port} serves sha256 ${pinOf(served.x509)}, not the pinned`));
    } finally {
      server.close();
    }
  });
});

describe('doctor: ports, host, egress, clock', () => {
  test('a port: reachable while running, taken (a fail naming it) or free when not', async () => {
    const holder = createServer((s) => s.destroy());
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    const port = (holder.address() as { port: number }).port;
    const at = { publicHost: '127.0.0.1', bindHost: '127.0.0.1' };
    assert.equal((await portCheck(api(port), { ...at, running: true })).status, 'pass');
    const taken = await portCheck(api(port), { ...at, running: false });
    assert.equal(taken.status, 'fail');
    assert.match(taken.detail, new RegExp(`port ${port} is taken by another process`));
    await new Promise((r) => holder.close(r));
    assert.equal((await portCheck(api(port), { ...at, running: false })).status, 'pass');
    const closed = await portCheck(api(port), { ...at, running: true });
    assert.equal(closed.status, 'fail');
    assert.match(closed.detail, /ECONNREFUSED/);
  });

  test('public host: loopback counts for a loopback host; an address elsewhere warns; no answer fails', async () => {
    const interfaces = { lo: [{ address: '127.0.0.1', netmask: '255.0.0.0', family: 'IPv4' as const, mac: '00:00:00:00:00:00', internal: true, cidr: '127.0.0.1/8' }] };
    assert.equal((await publicHostCheck('127.0.0.1', interfaces)).status, 'pass');
    assert.equal((await publicHostCheck('127.0.0.2', interfaces)).status, 'pass');
    assert.equal((await publicHostCheck('203.0.113.7', interfaces)).status, 'warn');
    assert.equal((await publicHostCheck('no-such-host.invalid', interfaces)).status, 'fail');
  });

  test('egress is judged by the policy code for a public address (nothing sent)', () => {
    for (const p of ['public-only', 'lan', 'allow-all'] as const) assert.equal(egressCheck(p).status, 'pass');
    assert.equal(egressCheck('public-only', { address: '10.1.2.3', port: 443 }).status, 'fail');
    assert.equal(egressCheck('lan', { address: '10.1.2.3', port: 443 }).status, 'pass');
  });

  test('clock: within 5 s passes, more warns, nothing to compare with warns that it was not checked', () => {
    const now = Date.now();
    const at = (offsetMs: number) => ({ date: new Date(now + offsetMs).toUTCString(), sentAt: now - 20, receivedAt: now + 20, from: 'https://x' });
    assert.equal(clockCheck(at(1_500)).status, 'pass');
    assert.equal(clockCheck(at(-30_000)).status, 'warn');
    assert.match(clockCheck(null).detail, /could not be checked/);
    assert.equal(clockCheck({ ...at(0), date: null }).status, 'warn');
    // PostgreSQL's clock tells milliseconds: no second of rounding is forgiven.
    const pg = (offsetMs: number) => ({ date: new Date(now + offsetMs).toISOString(), sentAt: now - 20, receivedAt: now + 20, from: 'PostgreSQL at db:5432', resolutionMs: 1 });
    assert.equal(clockCheck(pg(4_900)).status, 'pass');
    assert.equal(clockCheck(pg(5_500)).status, 'warn');
    assert.equal(clockCheck(at(5_500)).status, 'pass', 'an HTTP Date 5.5 s off may be 4.5 s off');
    assert.match(clockCheck(pg(-7_000)).detail, /^this machine and PostgreSQL at db:5432 differ by about 7 s$/);
  });
});

const node = (name: string, zone: string, up: boolean, clock_skew_ms: number | null = null): NodeInfo => ({
  id: name, name, zone, public_host: '127.0.0.2', vless_ws_port: null, vless_tcp_port: null, proxy_port: null, token_prefix: 'vadn_x',
  created_at: '2026-01-01T00:00:00.000Z', last_contact: up ? new Date().toISOString() : null, up, stopped_at: null, tls: false, tls_pcs: null, clock_skew_ms,
});

describe('doctor: database, cluster, zones', () => {
  test('the SQLite database: none yet, the latest, pending versions named, newer than the program', async () => {
    const d = tempDir();
    try {
      assert.equal((await databaseCheck(sqliteProbe(d))).check.status, 'warn');
      openDatabase(d).close();
      const probe = sqliteProbe(d);
      const latest = await databaseCheck(probe);
      assert.equal(latest.version, LATEST_SCHEMA);
      assert.equal(latest.check.status, 'pass');
      assert.match(latest.check.detail, new RegExp(`schema version ${LATEST_SCHEMA} \\(the latest\\)$`));
      assert.deepEqual(await probe.nodes(), []);
      await probe.close();
      const set = (v: number) => {
        const db = new DatabaseSync(join(d, DB_FILE));
        db.exec(`PRAGMA user_version = ${v}`);
        db.close();
      };
      set(LATEST_SCHEMA - 2);
      const pending = await databaseCheck(sqliteProbe(d));
      assert.equal(pending.check.status, 'warn');
      assert.match(pending.check.detail, new RegExp(`pending migrations: version ${LATEST_SCHEMA - 1}, version ${LATEST_SCHEMA}$`));
      set(LATEST_SCHEMA + 1);
      assert.equal((await databaseCheck(sqliteProbe(d))).check.status, 'fail');
    } finally {
      removeDir(d);
    }
  });

  test('cluster: local zones pass, a zone whose nodes are all down fails, a zone offered with no node warns', () => {
    const local = { code: 'de-fra', catalogueNodes: ['local'], catalogueActive: true };
    const syd = { code: 'au-syd', catalogueNodes: [], catalogueActive: false };
    assert.equal(clusterCheck([local, syd], [node('syd-1', 'au-syd', true), node('syd-2', 'au-syd', false)]).status, 'pass');
    const down = clusterCheck([local, syd], [node('syd-1', 'au-syd', false)]);
    assert.equal(down.status, 'fail');
    assert.match(down.fix, /node run/);
    assert.match(down.detail, /au-syd: every node down \(syd-1 down, last contact never\)/);
    const none = clusterCheck([local, { code: 'br-sao', catalogueNodes: [], catalogueActive: false }], []);
    assert.equal(none.status, 'warn');
    assert.match(none.detail, /br-sao: no node/);
    assert.match(none.fix, /node add/);
  });

  test("cluster: an up node's clock, as it reports it, more than 5 s off warns, past the grant window fails", () => {
    const syd = { code: 'au-syd', catalogueNodes: [], catalogueActive: false };
    const check = (...nodes: NodeInfo[]) => clusterCheck([syd], nodes);
    assert.equal(check(node('syd-1', 'au-syd', true, 5_000), node('syd-2', 'au-syd', true, null)).status, 'pass', 'within 5 s, or not reported yet');
    const behind = check(node('syd-1', 'au-syd', true, -7_000), node('syd-2', 'au-syd', true, 0));
    assert.equal(behind.status, 'warn');
    assert.match(behind.detail, /syd-1: clock 7 s behind the control plane/);
    assert.doesNotMatch(behind.detail, /syd-2: clock/);
    assert.match(behind.fix, /^run NTP on the nodes named .*timedatectl set-ntp true.*60 s off$/);
    const ahead = check(node('syd-1', 'au-syd', true, 90_000));
    assert.equal(ahead.status, 'fail');
    assert.match(ahead.detail, /syd-1: clock 90 s ahead of the control plane/);
    assert.equal(check(node('syd-1', 'au-syd', false, 90_000), node('syd-2', 'au-syd', true, 0)).status, 'pass', 'a down node is judged by its state, not its last clock');
    // Every finding's fix, once each: the down zone's and the clock's.
    const both = clusterCheck([syd, { code: 'jp-tyo', catalogueNodes: [], catalogueActive: false }], [node('syd-1', 'au-syd', true, 9_000), node('tyo-1', 'jp-tyo', false)]);
    assert.equal(both.status, 'fail');
    assert.match(both.fix, /node run.*; run NTP/);
  });

  test('zones: the built-in catalogue loads; duplicate ids and a zone without a country are named', () => {
    assert.equal(zonesCheck(undefined).check.status, 'pass');
    const d = tempDir();
    try {
      const file = join(d, 'zones.json');
      writeFileSync(file, JSON.stringify({ zones: [{ code: 'de-fra', name: 'F', country: 'DE' }, { code: 'de-fra', name: 'F2', country: 'DE' }] }));
      assert.match(zonesCheck(file).check.detail, /lists zone de-fra more than once/);
      writeFileSync(file, JSON.stringify({ zones: [{ code: 'de-fra', name: 'F' }] }));
      assert.match(zonesCheck(file).check.detail, /zone de-fra has no country/);
      writeFileSync(file, '{');
      assert.equal(zonesCheck(file).check.status, 'fail');
    } finally {
      removeDir(d);
    }
  });

  test('the people\'s form: a mark per check, the fix under warnings and failures, a summary line', () => {
    const text = formatReport(report([
      { id: 'a', title: 'A', status: 'pass', detail: 'fine', fix: '' },
      { id: 'b', title: 'B', status: 'fail', detail: 'broken', fix: 'mend it' },
    ]));
    assert.equal(text, '[ ok ] A: fine\n[FAIL] B: broken\n       fix: mend it\n\n1 passed, 0 warnings, 1 failed: clients will fail until the failures are fixed\n');
  });
});
