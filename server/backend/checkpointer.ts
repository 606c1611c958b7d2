// WAL checkpoints of the server's SQLite database, off the event loop. SQLite copies the WAL back
// into the database file (a checkpoint) in the connection whose commit pushed the WAL past 1,000
// pages, and with synchronous=NORMAL that copy is where the fsyncs are: under a stream of
// writes every few hundred commits stalled the event loop for milliseconds (up to 50 ms
// measured), holding every request in flight. Here a worker thread with its own connection runs
// a PASSIVE checkpoint (it never blocks readers or writers) every CHECKPOINT_MS, and the API's
// connection checkpoints by itself only past BACKSTOP_PAGES, should the worker fall behind or
// stop. Durability is unchanged: commits are not synced either way (a committed transaction
// survives the death of the process; a power loss may drop the last ones), and the WAL is synced
// before each checkpoint, now more often rather than less. The worker is plain JavaScript given as
// source (eval), so the bundled server needs no extra file.
import { Worker } from 'node:worker_threads';
import type { DatabaseSync } from 'node:sqlite';
import type { Logger } from '../domain.ts';

/** How often the worker checkpoints. */
export const CHECKPOINT_MS = 100;
/** The API connection's own auto-checkpoint, as a backstop (pages of 4 KiB: 40 MiB of WAL). */
export const BACKSTOP_PAGES = 10_000;

const WORKER_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const { DatabaseSync } = require('node:sqlite');
const db = new DatabaseSync(workerData.file);
db.exec('PRAGMA busy_timeout = 5000');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
let stopped = false;
const timer = setInterval(() => {
  try {
    checkpoint.get();
  } catch (err) {
    parentPort.postMessage({ failed: String(err && err.message || err) });
  }
}, workerData.everyMs);
parentPort.on('message', () => {
  if (stopped) return;
  stopped = true;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/** Starts the worker on the database `db` has open; returns the stop function (awaits the worker's end). */
export function startCheckpointer(db: DatabaseSync, file: string, log: Logger, everyMs = CHECKPOINT_MS): () => Promise<void> {
  db.exec(`PRAGMA wal_autocheckpoint = ${BACKSTOP_PAGES}`);
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, everyMs } });
  let warned = false;
  worker.on('message', (m: { failed?: string }) => {
    if (m.failed && !warned) {
      warned = true;
      log.warn({ err: m.failed }, 'WAL checkpoint failed; the server checkpoints by itself past its backstop');
    }
  });
  worker.on('error', (err) => {
    log.warn({ err: String(err) }, 'the WAL checkpoint worker stopped; the server checkpoints by itself');
    try {
      db.exec('PRAGMA wal_autocheckpoint = 1000');
    } catch {
      // closed meanwhile: nothing to checkpoint
    }
  });
  const ended = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  // After the listeners: adding a 'message' listener refs the worker's port again, and a worker
  // that is not unref'd keeps the process alive.
  worker.unref();
  return async () => {
    // Held while it ends: a process closing its server must not exit before the rest of its close.
    worker.ref();
    worker.postMessage('stop');
    await ended;
  };
}
