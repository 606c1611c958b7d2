// The request log (app.ts onResponse hook, through the line logger): no token, given in any
// query string or header, ever reaches a log line, whatever the answer was; a long URL is cut.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LOGGED_URL_CHARS } from '../../server/app.ts';
import { createLogger } from '../../server/log.ts';
import { auth, makeServer } from '../helpers/server.ts';

test('a token in a query string or a header never reaches the request log', async () => {
  const lines: string[] = [];
  const s = await makeServer({ logRequests: true, logger: createLogger({ level: 'debug', write: (l) => lines.push(l) }) });
  try {
    const tokens = [s.owner, s.agent, s.other];
    const [owner, agent, other] = tokens;
    await s.app.inject({ url: `/?token=${encodeURIComponent(owner)}` });
    await s.app.inject({ url: `/v2/zones?access_token=${owner}` });
    await s.app.inject({ url: `/v2/zones?token=${agent}`, headers: auth(agent) });
    await s.app.inject({ url: `/v2/sessions?client_id=erin&api_key=${other}&x=1`, headers: auth(other) });
    await s.app.inject({ url: `/v1/zones?Token=${other}` });
    await s.app.inject({ url: `/v2/no-such-route?auth=${owner}`, headers: { authorization: `Bearer ${owner}` } });
    await s.app.inject({ url: '/v2/zones', headers: { authorization: `Bearer ${owner}x`, 'x-api-key': owner } });
    // A long URL is cut (a line stays readable), after its token was redacted.
    await s.app.inject({ url: `/v2/zones?q=${'a'.repeat(5000)}&token=${owner}`, headers: auth(owner) });
    const log = lines.join('\n');
    assert.ok(lines.length >= 8, log);
    const long = lines.find((l) => l.includes('GET /v2/zones?q=aaa'));
    assert.ok(long && long.length < LOGGED_URL_CHARS + 100, long);
    assert.match(long, /GET \/v2\/zones\?q=a{288}… \(4\d{3} more characters\) 200/);
    assert.ok(log.includes('GET /v2/zones?access_token=… 401'), log);
    assert.ok(log.includes('GET /v2/sessions?client_id=erin&api_key=…&x=1 400'), log); // unknown parameters are refused
    for (const t of tokens) {
      assert.ok(!log.includes(t), `a token reached the log:\n${log}`);
      // Nothing past the stored prefix (vad_ + 6) either.
      assert.ok(!log.includes(t.slice(0, 14)), `a part of a token reached the log:\n${log}`);
    }
  } finally {
    await s.close();
  }
});
