// What survives a crash, with real processes: sessions left `active` by a server killed with
// kill -9 while connections were open are closed on the next start as the data plane would have
// closed them (one-shot → ended, reusable → idle, duration and counters kept, session_end), and
// a second `serve` on a data folder in use is refused with a clear error (the lock of a dead
// server is taken over, at once: even while the killed process is still a zombie; and a pid
// written in a lock file never locks the folder, whoever has that pid now).
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { DatabaseSync } from 'node:sqlite';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { printedToken, serve } from '../helpers/cli.ts';
import { CLI, NODE, ROOT, removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { openRaw } from '../helpers/sse.ts';
import { startTcpEcho } from '../dataplane/helpers/targets.ts';

interface Row { id: string; status: string; duration: number; uploaded_bytes: number; downloaded_bytes: number }
const rows = (dir: string): Row[] => {
  const db = new DatabaseSync(join(dir, 'vpn-access.db'), { readOnly: true });
  try {
    return db.prepare('SELECT id, status, duration, uploaded_bytes, downloaded_bytes FROM sessions ORDER BY seq').all() as unknown as Row[];
  } finally {
    db.close();
  }
};

function tunnel(proxyPort: number, id: string, target: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(proxyPort, '127.0.0.1');
    s.on('error', reject);
    let got = '';
    s.on('data', (b: Buffer) => {
      got += b.toString('latin1');
      if (got.includes('\r\n\r\n')) {
        if (!got.startsWith('HTTP/1.1 200')) reject(new Error(got));
        else resolve(s);
      }
    });
    const auth = Buffer.from(`${id}:${id}`).toString('base64');
    s.write(`CONNECT 127.0.0.1:${target} HTTP/1.1\r\nProxy-Authorization: Basic ${auth}\r\n\r\n`);
  });
}

test('sessions left active by a server killed with kill -9 are closed on the next start, as the data plane would have', async () => {
  const dir = tempDir('vad-crash-');
  const echo = await startTcpEcho();
  const sockets: Socket[] = [];
  try {
    const first = await serve(dir, ['--quiet', '--proxy-port', '0', '--egress', 'allow-all']);
    const token = printedToken(first.stdout())!;
    const H = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const create = async (reusable: boolean) => {
      const res = await fetch(`${first.baseUrl}/sessions`, { method: 'POST', headers: H, body: JSON.stringify({ client_id: 'crash', zone: 'de-fra', reusable }) });
      assert.equal(res.status, 201);
      return ((await res.json()) as { id: string }).id;
    };
    const oneShot = await create(false);
    const reusable = await create(true);
    const proxyPort = Number(/proxy (\d+)/.exec(first.stdout())![1]);
    for (const id of [oneShot, reusable]) {
      const s = await tunnel(proxyPort, id, echo.port);
      s.write('x'.repeat(1000));
      sockets.push(s);
    }
    await waitFor(() => rows(dir).every((r) => r.status === 'active'), 10_000, 'both sessions active in the database');
    // Let a counter flush happen so there is a duration to keep.
    await waitFor(() => rows(dir).every((r) => r.duration >= 1 && r.uploaded_bytes > 0), 15_000, 'counters saved');
    first.kill('SIGKILL');
    await first.exited;
    const before = new Map(rows(dir).map((r) => [r.id, r]));
    assert.ok([...before.values()].every((r) => r.status === 'active'), 'the crash left them active');

    const second = await serve(dir, ['--quiet', '--proxy-port', '0', '--egress', 'allow-all']);
    try {
      const after = new Map(rows(dir).map((r) => [r.id, r]));
      assert.equal(after.get(oneShot)!.status, 'ended');
      assert.equal(after.get(reusable)!.status, 'idle');
      for (const id of [oneShot, reusable]) {
        for (const k of ['duration', 'uploaded_bytes', 'downloaded_bytes'] as const) assert.equal(after.get(id)![k], before.get(id)![k], `${k} kept`);
      }
      const api = await fetch(`${second.baseUrl}/sessions/${oneShot}`, { headers: H });
      assert.equal(((await api.json()) as { status: string }).status, 'ended');
      const st = await openRaw(`${second.baseUrl}/sessions/events`, { ...H, 'last-event-id': '0' });
      await waitFor(() => st.events().filter((e) => e.event_type === 'session_end').length === 2, 5000, 'two session_end events');
      for (const id of [oneShot, reusable]) {
        const end = st.events().find((e) => e.event_type === 'session_end' && e.session_id === id)!;
        assert.equal(end.duration, before.get(id)!.duration);
        assert.equal(end.uploaded_bytes, before.get(id)!.uploaded_bytes);
      }
      st.close();
      // The reusable session takes connections again.
      const again = await tunnel(Number(/proxy (\d+)/.exec(second.stdout())![1]), reusable, echo.port);
      again.destroy();
    } finally {
      second.kill('SIGTERM');
      await second.exited;
    }
  } finally {
    for (const s of sockets) s.destroy();
    await echo.close();
    removeDir(dir);
  }
});

test('a second serve on a data folder in use is refused with a clear error; a dead server\'s lock is taken over', async () => {
  const dir = tempDir('vad-lock-');
  try {
    const first = await serve(dir, ['--quiet']);
    const second = spawn(NODE, [CLI, 'serve', '--data-dir', dir, '--host', '127.0.0.1', '--port', '0', '--vless-tcp-port', 'off', '--proxy-port', 'off', '--no-ui', '--quiet'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    second.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
    const code = await new Promise<number | null>((r) => second.once('exit', (c) => r(c)));
    assert.notEqual(code, 0);
    assert.match(err, new RegExp(`in use by another vpn-access server \\(pid ${first.child.pid}[,)]`));
    assert.doesNotMatch(err, /\n\s+at /, 'a message, not a stack trace');
    first.kill('SIGKILL');
    await first.exited;
    const third = await serve(dir, ['--quiet']);
    third.kill('SIGTERM');
    await third.exited;
  } finally {
    removeDir(dir);
  }
});

const SERVE_ARGS = ['--host', '127.0.0.1', '--port', '0', '--vless-tcp-port', 'off', '--proxy-port', 'off', '--no-ui', '--quiet'];

test('a restart right after kill -9 is not refused while the killed server is still a zombie', async () => {
  const dir = tempDir('vad-zombie-');
  // The server runs under a parent that never reaps it (sh exec'ing sleep): killed, it stays a zombie.
  const quote = (a: string) => `'${a.replace(/'/g, `'\\''`)}'`;
  const cmd = `${[NODE, CLI, 'serve', '--data-dir', dir, ...SERVE_ARGS].map(quote).join(' ')} & echo "pid $!"; exec sleep 120`;
  const parent = spawn('sh', ['-c', cmd], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  parent.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  try {
    await waitFor(() => /listening: API/.test(out), 20_000, 'the first server listening');
    const pid = Number(/^pid (\d+)$/m.exec(out)![1]);
    process.kill(pid, 'SIGKILL');
    await waitFor(() => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].startsWith('Z'), 5000, 'the killed server a zombie');
    const second = await serve(dir, ['--quiet']);
    assert.ok(existsSync(`/proc/${pid}`), 'the zombie is still there while the second server runs');
    second.kill('SIGTERM');
    await second.exited;
  } finally {
    parent.kill('SIGKILL');
    removeDir(dir);
  }
});

test('a lock file naming a running process (a pid reused after a reboot) does not lock the folder', async () => {
  const dir = tempDir('vad-pidlock-');
  try {
    // What a server killed before a reboot leaves behind, its pid now another live process's.
    const first = await serve(dir, ['--quiet']);
    first.kill('SIGKILL');
    await first.exited;
    writeFileSync(join(dir, 'serve.lock'), `${process.pid}\n`);
    const again = await serve(dir, ['--quiet']);
    again.kill('SIGTERM');
    assert.equal((await again.exited).code, 0);
  } finally {
    removeDir(dir);
  }
});
