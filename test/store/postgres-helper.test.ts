// The throwaway PostgreSQL server of the tests: it starts as an unprivileged user on a free
// loopback port, survives stop/kill -9 + restart on the same data folder and port, and leaves
// nothing behind.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import pg from 'pg';
import { startPostgres } from '../helpers/postgres.ts';

async function one(url: string, sql: string): Promise<unknown[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
}

test('start, write, kill -9, restart keeps committed rows; destroy removes everything', async (t) => {
  const server = await startPostgres(t);
  assert.match(server.url(), /^postgres:\/\/vad:[0-9a-f]+@127\.0\.0\.1:\d+\/vad$/);
  const [who] = (await one(server.url(), 'SELECT current_user AS u, version() AS v')) as { u: string; v: string }[];
  assert.equal(who.u, 'vad');
  assert.match(who.v, /^PostgreSQL 15\./);
  await one(server.url(), 'CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2)');

  const pid = server.pid!;
  const port = server.port;
  await server.kill9();
  assert.throws(() => process.kill(pid, 0), /ESRCH/);
  await assert.rejects(one(server.url(), 'SELECT 1'));
  await server.start();
  assert.equal(server.port, port, 'the same port, so URLs handed out stay valid');
  assert.deepEqual(await one(server.url(), 'SELECT x FROM t ORDER BY x'), [{ x: 1 }, { x: 2 }]);

  await server.restart();
  assert.deepEqual(await one(server.url(), 'SELECT count(*)::int AS n FROM t'), [{ n: 2 }]);

  const other = await server.createDatabase('second');
  assert.deepEqual(await one(other, 'SELECT current_database() AS d'), [{ d: 'second' }]);

  const last = server.pid!;
  await server.destroy();
  assert.throws(() => process.kill(last, 0), /ESRCH/);
  assert.equal(existsSync(server.dir), false);
});
