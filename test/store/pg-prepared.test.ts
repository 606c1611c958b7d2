// PostgreSQL's runner prepares each statement text with parameters once per connection (named
// statements): a second run of the same operation binds and executes, the answers unchanged.
import assert from 'node:assert/strict';
import { after as afterAll, before as beforeAll, test } from 'node:test';
import { openPool } from '../../server/store/pg/pool.ts';
import { migrate } from '../../server/store/pg/schema.ts';
import { limitOps } from '../../server/store/repos/limits.ts';
import { tokenOps } from '../../server/store/repos/tokens.ts';
import { PgRunner } from '../../server/store/sql/pg-runner.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';

let server: PgServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(() => server.destroy());

test('statements with parameters are prepared by name once per connection and give the same answers', async () => {
  const pool = openPool(await server.createDatabase('prepared'), { max: 1 });
  try {
    await migrate(pool);
    const runner = new PgRunner(pool);
    const c = (await runner.run(tokenOps.ensureCustomer('acme'))).id;
    assert.equal(await runner.run(limitOps.getLimits(c, 'global')), undefined);
    await runner.run(limitOps.patchLimits(c, 'global', { max_sessions: 3 }));
    for (let i = 0; i < 3; i++) assert.equal((await runner.run(limitOps.getLimits(c, 'global')))?.max_sessions, 3);
    // One connection (max 1): the statements it prepared are listed once each, under our names.
    const { rows } = await pool.query<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements');
    const limits = rows.filter((r) => r.statement.startsWith('SELECT fields FROM limits'));
    assert.equal(limits.length, 1);
    assert.match(limits[0].name, /^vad_\d+$/);
  } finally {
    await pool.end();
  }
});
