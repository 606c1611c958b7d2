// GatheredReads (server/dataplane/relay-reads.ts): the entry's relay reads, gathered into large
// pooled buffers. Driven through its socket `onread` interface as a socket drives it (a buffer,
// then a callback with what was read into it), and over a real TLS connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect as tlsConnect, createServer as createTlsServer } from 'node:tls';
import { GatheredReads } from '../../server/dataplane/relay-reads.ts';
import { LARGE_READ, SMALL_READ, giveBack, takeBuffer } from '../../server/dataplane/outbound.ts';
import { readFileSync } from 'node:fs';
import { makeCert } from '../helpers/tls.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

const RECORD = 16 * 1024;
const nextRound = () => new Promise((r) => setImmediate(r));

/** Reads `bytes` into `reads` as a socket does: the buffer it offers, then the count read into it. */
function feed(reads: GatheredReads, bytes: Buffer): void {
  const into = reads.onread.buffer();
  assert.ok(into.byteLength >= bytes.length, 'room for a record');
  into.set(bytes);
  assert.equal(reads.onread.callback(bytes.length), true);
}

type Got = Array<{ b: Buffer; release: (err?: Error | null) => void }>;
const collect = (reads: GatheredReads): Got => {
  const got: Got = [];
  reads.attach((b, release) => got.push({ b, release }));
  return got;
};

test('records read in one round go on as one chunk, in order, at the end of the round', async () => {
  const reads = new GatheredReads();
  const got = collect(reads);
  const parts = [randomBytes(1000), randomBytes(RECORD), randomBytes(7)];
  for (const p of parts) feed(reads, p);
  assert.equal(got.length, 0, 'nothing before the round ends');
  await nextRound();
  assert.equal(got.length, 1);
  assert.deepEqual(got[0].b, Buffer.concat(parts));
  feed(reads, Buffer.from('next'));
  reads.flush(); // as before the socket's end is passed on: at once
  assert.equal(got.length, 2);
  assert.equal(got[1].b.toString(), 'next');
  await nextRound();
  assert.equal(got.length, 2, 'nothing handed over twice');
});

test('without a sink, chunks wait in order; attach hands them over first', async () => {
  const reads = new GatheredReads();
  feed(reads, Buffer.from('one'));
  await nextRound();
  feed(reads, Buffer.from('two'));
  reads.flush();
  const got = collect(reads);
  assert.deepEqual(got.map((g) => g.b.toString()), ['one', 'two']);
  reads.detach();
  feed(reads, Buffer.from('three'));
  await nextRound();
  assert.equal(got.length, 2, 'detached: kept');
  reads.attach((b, release) => got.push({ b, release }));
  assert.deepEqual(got.map((g) => g.b.toString()), ['one', 'two', 'three']);
});

test('a buffer about full goes on at once: a small one first, large ones after, small ones again with small traffic; recycled only once released, never after a failed write', async () => {
  const reads = new GatheredReads();
  const got = collect(reads);
  /** Records in one round until the next hand-over (a buffer with less than a record's room left). */
  const fillOne = () => {
    const sent: Buffer[] = [];
    const before = got.length;
    while (got.length === before) {
      assert.ok(sent.length * RECORD <= LARGE_READ, 'handed over once full');
      sent.push(randomBytes(RECORD));
      feed(reads, sent.at(-1)!);
    }
    assert.equal(got.length, before + 1, 'handed over within the round, without waiting for its end');
    assert.deepEqual(got.at(-1)!.b, Buffer.concat(sent));
    return got.at(-1)!;
  };
  assert.equal(fillOne().b.buffer.byteLength, SMALL_READ, 'a connection starts with a small buffer');
  const large = fillOne();
  assert.equal(large.b.buffer.byteLength, LARGE_READ, 'its first buffer full, large ones');
  assert.ok(LARGE_READ - large.b.length < RECORD + 256, 'filled up');
  const first = large.b.buffer;
  // Small traffic (a round under one record): the large buffer in use goes on with its next read, then small ones.
  feed(reads, Buffer.from('a'));
  await nextRound();
  feed(reads, Buffer.from('b'));
  feed(reads, Buffer.from('c'));
  await nextRound();
  assert.deepEqual(got.slice(2).map((g) => [g.b.toString(), g.b.buffer.byteLength]), [['a', LARGE_READ], ['b', LARGE_READ], ['c', SMALL_READ]]);
  assert.equal(got[2].b.buffer, got[3].b.buffer);
  assert.notEqual(got[2].b.buffer, first, 'the next read went into another buffer');

  // Sealed, its chunk not released: not in the pool (a fresh read would overwrite bytes still being written).
  const taken = Array.from({ length: 16 }, () => takeBuffer(LARGE_READ));
  assert.ok(taken.every((t) => t.buffer !== first), 'not recycled while its chunk is held');
  large.release();
  const back = takeBuffer(LARGE_READ);
  assert.equal(back.buffer, first, 'recycled once released');
  for (const t of [...taken, back]) giveBack(t);

  // A write that failed: its buffer is left to the collector.
  const reads2 = new GatheredReads();
  const got2 = collect(reads2);
  while (got2.length < 2) feed(reads2, randomBytes(RECORD)); // a small buffer, then a large one
  const failed = got2[1].b.buffer;
  const emptied = Array.from({ length: 16 }, () => takeBuffer(LARGE_READ));
  got2[1].release(new Error('EPIPE'));
  got2[1].release(); // at most once
  const next = takeBuffer(LARGE_READ);
  assert.notEqual(next.buffer, failed);
  for (const t of [...emptied, next]) giveBack(t);
});

test('over a real TLS connection: 3 MiB of records arrive intact, in chunks', async () => {
  const dir = tempDir('vad-relay-reads-');
  const made = makeCert(dir, 'relay');
  const [cert, key] = [readFileSync(made.cert, 'utf8'), readFileSync(made.key, 'utf8')];
  const data = randomBytes(3 * 1024 * 1024 + 99);
  const server = createTlsServer({ cert, key }, (s) => s.end(data));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  try {
    const reads = new GatheredReads();
    const chunks: Buffer[] = [];
    reads.attach((b, release) => {
      chunks.push(Buffer.from(b)); // copied: the buffer goes back to the pool
      release();
    });
    // `onread` is passed on to the socket by tls.connect (node's own code) though @types/node does not list it
    const onread = { onread: reads.onread };
    const tls = tlsConnect({ host: '127.0.0.1', port: (server.address() as { port: number }).port, rejectUnauthorized: false, ...onread });
    await new Promise<void>((resolve, reject) => {
      tls.on('error', reject);
      tls.on('end', () => {
        reads.flush();
        resolve();
      });
    });
    tls.destroy();
    assert.deepEqual(Buffer.concat(chunks), data);
  } finally {
    server.close();
    removeDir(dir);
  }
});
