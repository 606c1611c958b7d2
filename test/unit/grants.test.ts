// The grant arithmetic of cluster byte caps (server/store/grants.ts): whatever order nodes ask in
// and however their reports interleave, the grants outstanding plus what was moved never exceed
// the cap; a node asking again while it still holds enough gets nothing more; `final` says when
// nothing is left to grant.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allocate, KEEP_IDLE, releaseRow, type GrantRow } from '../../server/store/grants.ts';

const MiB = 1 << 20;
const want = { up: MiB, down: MiB };

test('a first grant is the size asked for; asking again while holding most of it adds nothing', () => {
  const first = allocate([], 'n1', { up: 0, down: 0 }, { cap: { up: null, down: 10 * MiB }, base: null, want });
  assert.deepEqual(first.grant.left, { up: null, down: MiB });
  assert.equal(first.grant.final.down, false);
  const again = allocate([first.row], 'n1', { up: 0, down: 0 }, { cap: { up: null, down: 10 * MiB }, base: null, want });
  assert.equal(again.row.granted_down, MiB);
});

test('grants never exceed what the cap leaves, whatever the order of asks and reports', () => {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  for (let round = 0; round < 200; round++) {
    const cap = Math.floor(rand() * 20 * MiB) + 1;
    const rows = new Map<string, GrantRow>();
    let total = 0;
    // Each node moves at most what it was granted; moved bytes are reported later or not yet.
    const moved = new Map<string, number>();
    for (let step = 0; step < 60; step++) {
      const node = `n${Math.floor(rand() * 3)}`;
      if (rand() < 0.5) {
        const { row, grant } = allocate([...rows.values()], node, { up: 0, down: total }, { cap: { up: null, down: cap }, base: null, want: { up: MiB, down: Math.floor(rand() * 4 * MiB) + 1 } });
        rows.set(node, row);
        assert.ok(grant.left.down! >= 0);
      } else {
        const r = rows.get(node);
        if (!r) continue;
        // The node moves part of what it may (its unreported bytes count against its grant too).
        const may = r.granted_down - r.used_down - (moved.get(node) ?? 0);
        const n = Math.floor(rand() * Math.max(0, may + 1));
        moved.set(node, (moved.get(node) ?? 0) + n);
        if (rand() < 0.6) {
          // A report arrives: used and the total grow together (one transaction).
          const m = moved.get(node)!;
          r.used_down += m;
          total += m;
          moved.set(node, 0);
        }
      }
      let everMoved = total;
      for (const m of moved.values()) everMoved += m;
      let outstanding = 0;
      for (const r of rows.values()) outstanding += Math.max(0, r.granted_down - r.used_down);
      assert.ok(total + outstanding <= Math.max(cap, total), `round ${round}: reported ${total} + outstanding ${outstanding} > cap ${cap}`);
      assert.ok(everMoved <= cap, `round ${round}: moved ${everMoved} > cap ${cap}`);
    }
  }
});

test('final once nothing is left; a periodic cap without a recorded base counts from now', () => {
  const rows: GrantRow[] = [{ node_id: 'n2', used_up: 0, used_down: 0, granted_up: 0, granted_down: 3 * MiB, gen: 0 }];
  const { grant } = allocate(rows, 'n1', { up: 0, down: MiB }, { cap: { up: null, down: 4 * MiB }, base: null, want: { up: MiB, down: 2 * MiB } });
  assert.equal(grant.left.down, 0);
  assert.equal(grant.final.down, true);
  const periodic = allocate([], 'n1', { up: 0, down: 50 * MiB }, { cap: { up: null, down: 4 * MiB }, base: null, periodic: true, want });
  assert.equal(periodic.grant.left.down, MiB);
  const based = allocate([], 'n1', { up: 0, down: 50 * MiB }, { cap: { up: null, down: MiB }, base: { up: 0, down: 49 * MiB + MiB / 2 }, want });
  assert.equal(based.grant.left.down, MiB / 2);
  assert.equal(based.grant.final.down, true);
});

test('an idle node\'s release returns all but KEEP_IDLE to what others may be granted; the generation moves on', () => {
  const cap = { up: null, down: 40 * MiB };
  // n1 moved 8 MiB and holds 24 MiB more; n2 can get only what is left beyond that hold.
  const n1: GrantRow = { node_id: 'n1', used_up: 0, used_down: 8 * MiB, granted_up: 0, granted_down: 32 * MiB, gen: 3 };
  const before = allocate([n1], 'n2', { up: 0, down: 8 * MiB }, { cap, base: null, want: { up: MiB, down: 64 * MiB } });
  assert.equal(before.grant.left.down, 8 * MiB);
  assert.equal(before.grant.final.down, true);
  const after = releaseRow(n1);
  assert.deepEqual([after.granted_down - after.used_down, after.gen, after.granted_up], [KEEP_IDLE, 4, 0]);
  const asked = allocate([after], 'n2', { up: 0, down: 8 * MiB }, { cap, base: null, want: { up: MiB, down: 64 * MiB } });
  assert.equal(asked.grant.left.down, 32 * MiB - KEEP_IDLE);
  assert.equal(asked.grant.gen, 0, 'n2\'s own row is of its own generation');
  // A row holding less than KEEP_IDLE keeps what it holds.
  assert.equal(releaseRow({ ...n1, granted_down: 8 * MiB + 100 }).granted_down, 8 * MiB + 100);
});
