// Every acknowledged write survives kill -9 of the real server process: sessions, pause
// flags and limits through the HTTP API of `vpn-access serve`, events through the internal
// publisher of a real server in a child process.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { printedToken, serve } from '../helpers/cli.ts';
import { NODE, removeDir, ROOT, tempDir, waitFor } from '../helpers/server.ts';
import { openRaw } from '../helpers/sse.ts';

test('sessions, pause flags and limits acknowledged before kill -9 are all there after a restart', async () => {
  const dir = tempDir('vad-durable-');
  try {
    const first = await serve(dir, ['--quiet', '--rate-limit', '100000/60']);
    const token = printedToken(first.stdout())!;
    assert.ok(token);
    const H = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`${first.baseUrl}${path}`, { method, headers: H, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

    // What the server acknowledged (2xx received), and what was in flight when it died.
    const sessions = new Map<string, { client_id: string; reusable: boolean }>();
    const paused = new Map<string, boolean>();
    const pauseInFlight = new Set<string>();
    const limits: Record<string, { acked?: Record<string, number>; inFlight?: Record<string, number> }> = { global: {}, client: {}, session: {} };
    let dead = false;
    const failures: string[] = [];

    const creator = async () => {
      for (let i = 0; !dead && i < 5000; i++) {
        const body = { client_id: `c-${i % 4}`, zone: i % 2 ? 'de-fra' : 'jp-tyo', reusable: i % 3 !== 0 };
        try {
          const res = await api('POST', '/sessions', body);
          if (res.status !== 201) throw new Error(String(res.status));
          const s = (await res.json()) as { id: string };
          sessions.set(s.id, { client_id: body.client_id, reusable: body.reusable });
          if (body.reusable) paused.set(s.id, false);
        } catch (e) {
          if (dead) return;
          failures.push(`create: ${e}`);
        }
      }
    };
    const pauser = async () => {
      for (let i = 0; !dead && i < 5000; i++) {
        const ids = [...paused.keys()].filter((id) => !pauseInFlight.has(id));
        if (ids.length === 0) {
          await new Promise((r) => setTimeout(r, 2));
          continue;
        }
        const id = ids[i % ids.length];
        const target = !paused.get(id);
        pauseInFlight.add(id);
        try {
          const res = await api('PATCH', `/sessions/${id}/${target ? 'pause' : 'resume'}`);
          if (res.status !== 200) throw new Error(String(res.status));
          const r = (await res.json()) as { paused: boolean };
          assert.equal(r.paused, target);
          paused.set(id, target);
          pauseInFlight.delete(id);
        } catch (e) {
          if (dead) return; // stays in flight: either value is acceptable
          pauseInFlight.delete(id);
          failures.push(`pause ${e}`);
        }
      }
    };
    const limiter = (scope: 'global' | 'client' | 'session') => async () => {
      for (let i = 1; !dead && i < 5000; i++) {
        const body: Record<string, number> = { downloaded_bytes: i * 1000, upload_speed: i };
        if (scope === 'client') body.max_sessions = i;
        limits[scope].inFlight = body;
        try {
          const res = await api('PATCH', `/customer/limits/${scope}`, body);
          if (res.status !== 200) throw new Error(String(res.status));
          await res.json();
          limits[scope].acked = body;
          limits[scope].inFlight = undefined;
        } catch (e) {
          if (dead) return;
          failures.push(`limits ${e}`);
        }
      }
    };

    const workers = [creator(), creator(), pauser(), pauser(), limiter('global')(), limiter('client')(), limiter('session')()];
    await waitFor(() => sessions.size >= 60 && [...paused.values()].some(Boolean) && limits.client.acked !== undefined, 30_000, 'load to build up');
    first.kill('SIGKILL');
    dead = true;
    const exit = await first.exited;
    assert.equal(exit.signal, 'SIGKILL');
    await Promise.all(workers);
    assert.deepEqual(failures, [], 'no request failed before the kill');

    const second = await serve(dir, ['--quiet', '--rate-limit', '100000/60']);
    try {
      assert.equal(printedToken(second.stdout()), undefined, 'the data folder is not new');
      const get = async (path: string) => {
        const res = await fetch(`${second.baseUrl}${path}`, { headers: { authorization: token } });
        return { status: res.status, body: (await res.json()) as any };
      };
      // Every acknowledged session, through the list (pagination) and one by one.
      const listed = new Set<string>();
      let cursor: string | null = null;
      for (let page = 0; page < 100; page++) {
        const r = await get(`/sessions?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(r.status, 200);
        for (const s of r.body.sessions) listed.add(s.id);
        cursor = r.body.next_cursor;
        if (!cursor) break;
      }
      for (const [id, meta] of sessions) {
        assert.ok(listed.has(id), `session ${id.slice(0, 8)} lost`);
        const st = await get(`/sessions/${id}/status`);
        assert.equal(st.status, 200);
        assert.equal(st.body.client_id, meta.client_id);
        if (meta.reusable && !pauseInFlight.has(id)) assert.equal(st.body.paused, paused.get(id), `pause flag of ${id.slice(0, 8)}`);
        if (!meta.reusable) assert.equal(st.body.paused, false);
      }
      assert.ok(listed.size >= sessions.size && listed.size <= sessions.size + 2, 'at most the in-flight creations were added');
      for (const scope of ['global', 'client', 'session'] as const) {
        const r = await get(`/customer/limits/${scope}`);
        assert.equal(r.status, 200, `${scope} limits lost`);
        const { acked, inFlight } = limits[scope];
        assert.ok(acked);
        const matches = (v?: Record<string, number>) => v !== undefined && Object.entries(v).every(([k, n]) => r.body[k] === n);
        assert.ok(matches(acked) || matches(inFlight), `${scope}: ${JSON.stringify(r.body)} vs acked ${JSON.stringify(acked)}`);
      }
    } finally {
      second.kill('SIGTERM');
      await second.exited;
    }
  } finally {
    removeDir(dir);
  }
});

test('events acknowledged by the internal publisher before kill -9 are replayed after a restart', async () => {
  const dir = tempDir('vad-durable-ev-');
  try {
    const child = spawn(NODE, [join(ROOT, 'test', 'helpers', 'publish-child.ts'), dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    const exited = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_c, s) => r(s)));
    try {
      await waitFor(() => {
        if (child.exitCode !== null) throw new Error(`the publishing child exited (${child.exitCode}): ${err}`);
        return (out.match(/^E \d+$/gm)?.length ?? 0) >= 3000;
      }, 30_000, '3000 acknowledged events');
    } finally {
      child.kill('SIGKILL');
    }
    assert.equal(await exited, 'SIGKILL');
    const token = /^ready \S+ (\S+)$/m.exec(out)![1];
    const acked = [...out.matchAll(/^E (\d+)$/gm)].map((m) => Number(m[1]));
    for (let i = 1; i < acked.length; i++) assert.equal(acked[i], acked[i - 1] + 1, 'ids strictly increase by one');

    const srv = await serve(dir, ['--quiet']);
    try {
      const st = await openRaw(`${srv.baseUrl}/sessions/events`, { authorization: `Bearer ${token}`, 'last-event-id': '0' });
      await waitFor(() => (st.lastId() ?? 0) >= acked[acked.length - 1], 15_000, 'the replay');
      st.close();
      const replayed = st.events();
      const ids = replayed.map((e) => e.id);
      assert.deepEqual(ids.slice(0, acked.length), acked, 'every acknowledged event, in order');
      assert.ok(ids.length - acked.length <= 20, 'at most the unacknowledged tail of the last burst');
      const last = replayed[acked.length - 1];
      assert.equal(last.uploaded_bytes * 2, last.downloaded_bytes);
      assert.match(last.session_id, /^durable-[0-2]$/);
    } finally {
      srv.kill('SIGTERM');
      await srv.exited;
    }
  } finally {
    removeDir(dir);
  }
});
