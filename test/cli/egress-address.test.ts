// `vpn-access serve --egress-address A,B`: checked (IP literals, each once), and the real serve
// process's proxy is the exit of its `local` zones: new connections rotate over both addresses,
// a sticky key keeps one. curl is the client; the destination answers with the source address.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { serve, printedToken } from '../helpers/cli.ts';
import { callApi } from '../helpers/http.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

let web: Server;
let webPort = 0;
const dirs: string[] = [];

before(async () => {
  web = createServer((req, res) => res.end(req.socket.remoteAddress ?? ''));
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', () => r()));
  webPort = (web.address() as { port: number }).port;
});
after(async () => {
  await new Promise<void>((r) => web.close(() => r()));
  for (const d of dirs) removeDir(d);
});

function through(proxyPort: number, user: string, pass: string): Promise<string> {
  return new Promise((resolve) => {
    execFile('curl', ['-s', '--max-time', '10', '-x', `http://127.0.0.1:${proxyPort}`, '-U', `${user}:${pass}`, `http://127.0.0.1:${webPort}/`], { encoding: 'utf8' }, (_e, out) => resolve(out));
  });
}

test('--egress-address takes comma-separated IP literals, each once', async () => {
  const d = tempDir('vad-egress-bad-');
  dirs.push(d);
  await assert.rejects(serve(d, ['--egress-address', '127.0.0.1,localhost']), /exited early[\s\S]*--egress-address takes local IP addresses separated by commas, not "localhost"/);
  await assert.rejects(serve(d, ['--egress-address', '127.0.0.1,127.0.0.1']), /exited early[\s\S]*--egress-address names an address twice/);
});

test('serve --egress-address 127.0.0.1,127.0.0.2: its proxy rotates over both; a sticky key keeps one', async () => {
  const d = tempDir('vad-egress-');
  dirs.push(d);
  const srv = await serve(d, ['--proxy-port', '0', '--egress', 'allow-all', '--egress-address', '127.0.0.1,127.0.0.2']);
  try {
    const token = printedToken(srv.stdout())!;
    const proxyPort = Number(/proxy (\d+)/.exec(srv.stdout())![1]);
    const made = await callApi(srv.baseUrl, token, 'POST', '/sessions', { client_id: 'cli-egress', zone: 'de-fra', reusable: true });
    assert.equal(made.status, 201);
    const id: string = made.json.id;
    const seen = new Set<string>();
    for (let i = 0; i < 4; i++) seen.add(await through(proxyPort, `${id}-cc-DE`, id));
    assert.deepEqual([...seen].sort(), ['127.0.0.1', '127.0.0.2']);
    const sticky = new Set<string>();
    for (let i = 0; i < 4; i++) sticky.add(await through(proxyPort, `${id}-cc-DE-sessid-cli1`, id));
    assert.equal(sticky.size, 1, `one address for the key: ${[...sticky]}`);
  } finally {
    srv.kill();
    await srv.exited;
  }
});
