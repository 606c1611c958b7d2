// "Let other devices connect" at the API level, through the path the desktop app uses
// (Endpoints from main/endpoint.ts with the real embedded server and data plane): sharing on
// 127.0.0.2 puts 127.0.0.2 in links and subscription URLs, serves the API there (token still
// required) and the raw TCP VLESS inbound answers there; the event stream reconnects to the
// restarted server; turning sharing off restarts on 127.0.0.1 and the 127.0.0.2 listeners are
// closed. An address that is not one of the machine's is refused.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { EventSource } from 'eventsource';
import { EventStream } from '../../common/event-stream.ts';
import type { LanAddress, SessionEvent, StreamState } from '../../common/api-types.ts';
import { Endpoints } from '../../main/endpoint.ts';
import { SettingsFile } from '../../main/settings.ts';
import { TokenStore } from '../../main/token-store.ts';
import { startTcpEcho } from '../dataplane/helpers/targets.ts';

const noKeychain = { isEncryptionAvailable: () => false, encryptString: () => Buffer.alloc(0), decryptString: () => '' };
const ADDRESSES: LanAddress[] = [{ address: '127.0.0.2', family: 4, interface: 'test0', lan: false }];

/** One VLESS request over raw TCP (version 0, the session's UUID, TCP to 127.0.0.1:port) and its echoed answer. */
function vlessEcho(host: string, port: number, uuid: string, targetPort: number, payload: string): Promise<string> {
  const id = Buffer.from(uuid.replace(/-/g, ''), 'hex');
  const head = Buffer.concat([Buffer.from([0]), id, Buffer.from([0, 1, targetPort >> 8, targetPort & 255, 1, 127, 0, 0, 1])]);
  return new Promise((resolve, reject) => {
    const sock: Socket = connect({ host, port });
    let got = Buffer.alloc(0);
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error('no answer within 10 s'));
    }, 10_000);
    sock.on('connect', () => sock.write(Buffer.concat([head, Buffer.from(payload)])));
    sock.on('data', (b) => {
      got = Buffer.concat([got, b]);
      // Answer: version 0, add-ons length 0, then the echoed bytes.
      if (got.length >= 2 + payload.length) {
        clearTimeout(timer);
        sock.destroy();
        resolve(got.subarray(2).toString());
      }
    });
    sock.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

function refused(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    s.on('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
  });
}

async function until(what: string, check: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('sharing on 127.0.0.2 and back to loopback: links, subscriptions, the API, the TCP inbound, the event stream', async () => {
  const userData = mkdtempSync(join(tmpdir(), 'vad-rebind-'));
  const echo = await startTcpEcho();
  const changes: boolean[] = [];
  let stream: EventStream | null = null;
  const settings = new SettingsFile(userData);
  const endpoints = new Endpoints({
    userData,
    settings,
    tokens: new TokenStore(userData, noKeychain),
    override: null,
    addresses: () => ADDRESSES,
    // The echo target is on loopback, which the app's policies (public-only, lan) refuse.
    egress: 'allow-all',
    onChange: (fresh) => {
      changes.push(fresh);
      stream?.restart({ fresh });
    },
  });
  try {
    await endpoints.select();
    const api = async <T>(method: string, path: string, token = endpoints.current()!.token, body?: unknown): Promise<{ status: number; body: T }> => {
      const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      const res = await fetch(endpoints.current()!.baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
    };
    assert.match(endpoints.current()!.baseUrl, /^http:\/\/127\.0\.0\.1:\d+\/v2$/);
    const first = endpoints.lanSharing();
    assert.equal(first.supported, true);
    assert.equal(first.enabled, false);
    assert.equal(first.suggested, '127.0.0.2', 'the only IPv4 address is preselected');

    const states: StreamState[] = [];
    const events: SessionEvent[] = [];
    stream = new EventStream({ EventSource, endpoint: () => endpoints.current(), filter: {}, onEvent: (e) => events.push(e), onState: (s) => states.push(s), retryDelay: () => 100 });
    await until('the stream to open', () => states.at(-1) === 'open');

    // An address this machine does not have is refused, and nothing restarts.
    const bad = await endpoints.setLanSharing({ enabled: true, address: '10.9.8.7' });
    assert.equal(bad.ok, false);
    assert.equal(!bad.ok && bad.error.code, 'invalid_request');
    assert.equal(changes.length, 1);

    // On: everything on 127.0.0.2.
    const statesBefore = states.length;
    const on = await endpoints.setLanSharing({ enabled: true, address: '127.0.0.2' });
    assert.ok(on.ok, JSON.stringify(on));
    assert.equal(on.value.enabled, true);
    assert.equal(on.value.address, '127.0.0.2');
    assert.deepEqual(changes, [true, false], 'a restart of the same server keeps event ids (not fresh)');
    assert.deepEqual(JSON.parse(readFileSync(settings.path, 'utf8')).lanSharing, { enabled: true, address: '127.0.0.2' });
    const lanServer = endpoints.server!;
    assert.match(endpoints.current()!.baseUrl, /^http:\/\/127\.0\.0\.2:\d+\/v2$/);
    assert.equal((await api('GET', '/zones', 'not-a-token')).status, 401, 'the API still wants its token on the shared address');
    const info = await api<{ public_host: string; vless_tcp_port: number }>('GET', '/server-info');
    assert.equal(info.body.public_host, '127.0.0.2');
    const created = await api<{ id: string; configuration_link: string; configuration: { id: string } }>('POST', '/sessions', undefined, { client_id: 'phone', zone: 'de-fra', reusable: true });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const session = created.body;
    assert.match(session.configuration_link, /@127\.0\.0\.2:\d+\?/, 'the link carries the shared address');
    const sub = await api<{ url: string }>('PUT', '/subscriptions/phone');
    assert.equal(sub.status, 200);
    assert.match(sub.body.url, /^http:\/\/127\.0\.0\.2:\d+\/sub\//, 'the subscription URL too');
    const feed = await fetch(sub.body.url);
    assert.equal(feed.status, 200, 'the subscription is served on the shared address');
    assert.equal(await vlessEcho('127.0.0.2', info.body.vless_tcp_port, session.configuration.id, echo.port, 'hello over lan'), 'hello over lan');
    await until('the stream to reopen on the restarted server', () => states.slice(statesBefore).includes('open'));
    await until('an event of the new session through the reopened stream', () => events.some((e) => e.session_id === session.id));

    // Off: back on loopback, the 127.0.0.2 listeners closed.
    const off = await endpoints.setLanSharing({ enabled: false });
    assert.ok(off.ok);
    assert.equal(off.value.enabled, false);
    assert.match(endpoints.current()!.baseUrl, /^http:\/\/127\.0\.0\.1:\d+\/v2$/);
    assert.ok(await refused('127.0.0.2', info.body.vless_tcp_port), 'the TCP inbound on 127.0.0.2 is closed');
    assert.ok(await refused('127.0.0.2', lanServer.apiPort), 'the API on 127.0.0.2 is closed');
    const back = await api<{ configuration_link: string }>('GET', `/sessions/${session.id}`);
    assert.match(back.body.configuration_link, /@127\.0\.0\.1:\d+\?/);
    const info2 = await api<{ vless_tcp_port: number }>('GET', '/server-info');
    assert.equal(await vlessEcho('127.0.0.1', info2.body.vless_tcp_port, session.configuration.id, echo.port, 'hello on loopback'), 'hello on loopback');
    assert.equal(JSON.parse(readFileSync(settings.path, 'utf8')).lanSharing.enabled, false);
  } finally {
    stream?.close();
    await endpoints.dispose();
    await echo.close();
    rmSync(userData, { recursive: true, force: true });
  }
});

test('a saved address that is gone falls back to loopback with sharing off', async () => {
  const userData = mkdtempSync(join(tmpdir(), 'vad-rebind-'));
  const settings = new SettingsFile(userData);
  // 192.0.2.1 (TEST-NET-1) is on no interface of this machine: listening there fails.
  settings.update({ lanSharing: { enabled: true, address: '192.0.2.1' } });
  const endpoints = new Endpoints({ userData, settings, tokens: new TokenStore(userData, noKeychain), override: null, addresses: () => ADDRESSES, onChange: () => {} });
  try {
    await endpoints.select();
    assert.match(endpoints.current()!.baseUrl, /^http:\/\/127\.0\.0\.1:/);
    assert.equal(endpoints.lanSharing().enabled, false);
    assert.deepEqual(settings.get().lanSharing, { enabled: false, address: '192.0.2.1' });
  } finally {
    await endpoints.dispose();
    rmSync(userData, { recursive: true, force: true });
  }
});

test('with a remote server, sharing is not offered', async () => {
  const userData = mkdtempSync(join(tmpdir(), 'vad-rebind-'));
  const endpoints = new Endpoints({
    userData,
    settings: new SettingsFile(userData),
    tokens: new TokenStore(userData, noKeychain),
    override: { baseUrl: 'http://127.0.0.1:9/v2', token: 't' },
    addresses: () => ADDRESSES,
    onChange: () => {},
  });
  try {
    await endpoints.select();
    assert.equal(endpoints.lanSharing().supported, false);
    const r = await endpoints.setLanSharing({ enabled: true, address: '127.0.0.2' });
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.error.status, 409);
  } finally {
    await endpoints.dispose();
    rmSync(userData, { recursive: true, force: true });
  }
});
