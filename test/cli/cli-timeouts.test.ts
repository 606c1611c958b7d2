// `vpn-access serve --idle-timeout SECONDS`: a relayed connection with no byte either way is
// closed after that long (default 300 s, v2ray's connIdle); a bad value is refused at start.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { WebSocket } from 'ws';
import { printedToken, serve } from '../helpers/cli.ts';
import { CLI, NODE, removeDir, ROOT, tempDir } from '../helpers/server.ts';
import { startTcpEcho } from '../dataplane/helpers/targets.ts';
import { buildVlessHeader } from '../../server/dataplane/vless-header.ts';

let dir: string;
before(() => { dir = tempDir('vad-idle-'); });
after(() => removeDir(dir));

test('serve --idle-timeout refuses a value that is not whole seconds', () => {
  for (const bad of ['0', 'abc', '1.5', '-3']) {
    const r = spawnSync(NODE, [CLI, 'serve', '--data-dir', dir, '--port', '0', `--idle-timeout=${bad}`], { cwd: ROOT, encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 2, bad);
    assert.match(r.stderr, /--idle-timeout takes whole seconds/);
  }
});

test('serve --idle-timeout 1 closes an idle VLESS connection within a few seconds', async () => {
  const echo = await startTcpEcho();
  const srv = await serve(dir, ['--idle-timeout', '1', '--egress', 'allow-all']);
  try {
    const token = printedToken(srv.stdout())!;
    const created = await fetch(`${srv.baseUrl}/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: 'idle', zone: 'de-fra', reusable: true }),
    });
    assert.equal(created.status, 201);
    const { id } = (await created.json()) as { id: string };
    const ws = new WebSocket(`${new URL(srv.baseUrl).origin.replace(/^http/, 'ws')}/vless`);
    ws.on('error', () => {});
    await new Promise((r) => ws.once('open', r));
    let got = 0;
    ws.on('message', (d: Buffer) => { got += d.length; });
    const closed = new Promise<number>((r) => ws.once('close', () => r(performance.now())));
    ws.send(Buffer.concat([buildVlessHeader({ id, command: 'tcp', port: echo.port, address: '127.0.0.1' }), Buffer.from('hi')]));
    const t0 = performance.now();
    const at = await Promise.race([closed, new Promise<number>((r) => setTimeout(() => r(-1), 8000).unref())]);
    assert.equal(got, 4, 'the echo came back before the connection went idle');
    assert.ok(at > 0, 'the idle connection was not closed within 8 s');
    assert.ok(at - t0 >= 900, `closed after ${Math.round(at - t0)} ms, before the idle timeout`);
  } finally {
    srv.kill();
    await srv.exited;
    await echo.close();
  }
});
