// time.ts: isoNow, shortId, redactIds (which must never let a whole id through).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { isoNow, redactIds, shortId } from '../../server/time.ts';
import { ISO_MS_Z } from '../helpers/server.ts';

test('isoNow is ISO 8601 UTC with milliseconds and Z', () => {
  const t = isoNow();
  assert.match(t, ISO_MS_Z);
  assert.ok(Math.abs(Date.parse(t) - Date.now()) < 5000);
});

test('shortId keeps 8 characters', () => {
  assert.equal(shortId('3f1c2a9e-7b4d-4c1e-9a2f-0123456789ab'), '3f1c2a9e…');
  assert.equal(shortId('abc'), 'abc');
  assert.equal(shortId('12345678'), '12345678');
});

test('redactIds cuts every UUID, in any case, anywhere in the text', () => {
  const a = '3f1c2a9e-7b4d-4c1e-9a2f-0123456789ab';
  const b = 'ABCDEF01-2345-4789-ABCD-EF0123456789';
  assert.equal(redactIds(`/v2/sessions/${a}/status`), '/v2/sessions/3f1c2a9e…/status');
  assert.equal(redactIds(`${a} and ${b}`), '3f1c2a9e… and ABCDEF01…');
  assert.equal(redactIds(`vless://${a}@host:1`), 'vless://3f1c2a9e…@host:1');
  assert.equal(redactIds('no ids here 3f1c2a9e-7b4d'), 'no ids here 3f1c2a9e-7b4d');
  assert.equal(redactIds(''), '');
});

test('property: no UUID survives redactIds', () => {
  fc.assert(
    fc.property(fc.array(fc.oneof(fc.uuid(), fc.string({ maxLength: 10 })), { maxLength: 8 }), (parts) => {
      const text = parts.join('/');
      const out = redactIds(text);
      for (const p of parts) if (/^[0-9a-f-]{36}$/i.test(p)) assert.ok(!out.includes(p));
      assert.ok(!/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i.test(out));
    }),
    { numRuns: 200 },
  );
});

test('redactIds removes the value of every token-like query parameter, bearer credential and API token', () => {
  const t = 'vad_Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5';
  assert.equal(redactIds(`/?token=${t}`), '/?token=…');
  assert.equal(redactIds(`/v2/zones?access_token=${t}&limit=5`), '/v2/zones?access_token=…&limit=5');
  assert.equal(redactIds(`/v2/events?client_id=a&TOKEN=${t}#x`), '/v2/events?client_id=a&TOKEN=…#x');
  assert.equal(redactIds('/x?api_key=abc&apikey=def&auth=ghi&password=jkl&sig=mno&id_token=pqr&refresh_token=stu'), '/x?api_key=…&apikey=…&auth=…&password=…&sig=…&id_token=…&refresh_token=…');
  // A percent-encoded name is still a token's name.
  assert.equal(redactIds('/?%74oken=secret1'), '/?%74oken=…');
  assert.equal(redactIds(`/#token=${encodeURIComponent(t)}`), '/#token=…');
  assert.equal(redactIds(`Authorization: Bearer ${t}`), 'Authorization: Bearer …');
  // A token anywhere else keeps only its stored prefix (vad_ and 6 characters).
  assert.equal(redactIds(`revoked ${t} today`), 'revoked vad_Zm9vYm… today');
  // Other parameters are untouched.
  assert.equal(redactIds('/v2/sessions?client_id=erin&status=active'), '/v2/sessions?client_id=erin&status=active');
});
