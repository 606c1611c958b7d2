// The line logger (log.ts), which never prints a whole id.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../server/log.ts';

test('createLogger: one readable line, levels, fields, and ids redacted', () => {
  const lines: string[] = [];
  const log = createLogger({ level: 'info', write: (l) => lines.push(l) });
  const id = '3f1c2a9e-7b4d-4c1e-9a2f-0123456789ab';
  log.debug('hidden');
  log.info(`GET /v2/sessions/${id}/status 200`);
  log.warn({ session: id, n: 3, text: 'two words' }, 'limit reached');
  log.error({ err: new Error('boom') }, 'failed');
  assert.equal(lines.length, 3, 'debug is below info');
  assert.match(lines[0], /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z INFO  GET \/v2\/sessions\/3f1c2a9e…\/status 200$/);
  assert.match(lines[1], /WARN  limit reached session=3f1c2a9e… n=3 text="two words"$/);
  assert.match(lines[2], /ERROR failed err="boom"$/);
  for (const l of lines) assert.ok(!l.includes(id) && !l.includes('\n'));
  const silent: string[] = [];
  createLogger({ level: 'silent', write: (l) => silent.push(l) }).error('x');
  assert.deepEqual(silent, []);
});

test('createLogger json: one object a line, time, level and msg first, fields after, ids and tokens redacted', () => {
  const lines: string[] = [];
  const log = createLogger({ level: 'info', format: 'json', write: (l) => lines.push(l) });
  const id = '3f1c2a9e-7b4d-4c1e-9a2f-0123456789ab';
  const token = 'vad_' + 'k'.repeat(43);
  log.debug('hidden');
  log.info(`GET /v2/sessions/${id}/status 200`);
  log.warn({ session: id, n: 3, text: 'two "quoted" words\nand a line', level: 'not mine', auth: `Bearer ${token}` }, 'limit reached');
  log.error({ err: new Error('boom') }, 'failed');
  assert.equal(lines.length, 3);
  const records = lines.map((l) => JSON.parse(l));
  assert.match(records[0].time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  assert.deepEqual(Object.keys(records[0]), ['time', 'level', 'msg']);
  assert.deepEqual({ ...records[0], time: 'T' }, { time: 'T', level: 'info', msg: 'GET /v2/sessions/3f1c2a9e…/status 200' });
  assert.deepEqual({ ...records[1], time: 'T' }, { time: 'T', level: 'warn', msg: 'limit reached', session: '3f1c2a9e…', n: 3, text: 'two "quoted" words\nand a line', auth: 'Bearer …' });
  assert.deepEqual({ ...records[2], time: 'T' }, { time: 'T', level: 'error', msg: 'failed', err: 'boom' });
  for (const l of lines) assert.ok(!l.includes(id) && !l.includes(token) && !l.includes('\n'));
  // A secret next to a quote, nested fields: still one valid JSON object, still redacted.
  lines.length = 0;
  log.info({ header: `"Bearer ${token}"`, url: 'https://h/x?token=abc"', nested: { ids: [id], deep: { sub: '/sub/abcdef123' } } }, `said "Bearer ${token}"`);
  const r = JSON.parse(lines[0]);
  assert.equal(r.msg, 'said "Bearer …"');
  assert.equal(r.header, '"Bearer …"');
  assert.equal(r.url, 'https://h/x?token=…"');
  assert.deepEqual(r.nested, { ids: ['3f1c2a9e…'], deep: { sub: '/sub/…' } });
});
