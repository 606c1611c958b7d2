// Versions 1 to 12 (server/store/migrations/legacy.ts) were released: databases in the field were
// made by them. They may be re-expressed only when they expand to exactly the schema released;
// on SQLite, which stores each CREATE text, that is the text of every table and index after each
// version, pinned here by its SHA-256 (taken from the texts as released).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { migrationSql } from '../../server/store/migrations/index.ts';

const RELEASED_SHA256 = '1abb32d4270f4ee6528bb7c73a82abc04b0372ed8e1f78092cc25bd356b03efb';

test('SQLite versions 1 to 12 expand to the schema text released', () => {
  const db = new DatabaseSync(':memory:');
  const hash = createHash('sha256');
  for (let v = 1; v <= 12; v++) {
    db.exec(migrationSql(v, 'sqlite'));
    const rows = db.prepare("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name").all() as { type: string; name: string; sql: string }[];
    hash.update(`${v}\n${rows.map((r) => `${r.type} ${r.name}\n${r.sql}`).join('\n')}\n`);
  }
  db.close();
  assert.ok(migrationSql(13, 'sqlite').length > 0, 'version 13 exists: 1 to 12 are all legacy');
  assert.equal(hash.digest('hex'), RELEASED_SHA256);
});
