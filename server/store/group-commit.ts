// Group commit of session creations, on both databases. A creation is one commit (its row, its
// placement, its audit record); under load most of its cost was that commit (SQLite: BEGIN, COMMIT
// and the WAL pages each commit writes; PostgreSQL: a round trip, a statement and a commit), not the
// rows. Creations are written in groups by ONE createSessions (one transaction on SQLite, one
// statement on PostgreSQL), one group at a time: a group is what was asked for while the event loop
// handled one batch of I/O and, on PostgreSQL, while the previous group's round trip was under way,
// so groups grow with the load. Each caller's promise settles only once its group has committed: an
// answered creation is as durable as before. On SQLite nothing else runs inside the group's
// transaction (opened, filled and committed in one synchronous step). A group that fails is rolled
// back whole; each of its creations is then written alone, so one bad creation fails only itself.
// On PostgreSQL under bench/cluster.ts's load this took the database's CPU per creation from about
// 250 µs (a statement each) to 50-100 µs (docs/operations.md).
import type { SessionRow } from '../domain.ts';
import type { Creation } from './repos/placements.ts';

/** What a group needs of a store: the sync SQLite Store and the async seam both have it. */
export interface CreationStore {
  createSessions(list: Creation[]): SessionRow[] | Promise<SessionRow[]>;
}

interface Waiting {
  args: Creation;
  resolve: (row: SessionRow) => void;
  reject: (err: unknown) => void;
}

/** One creation behind a promise that settles after its group's commit. */
export function groupedCreations(store: CreationStore): (...args: Creation) => Promise<SessionRow> {
  let queue: Waiting[] = [];
  let writing = false;
  let scheduled = false;

  const alone = async (w: Waiting): Promise<void> => {
    try {
      w.resolve((await store.createSessions([w.args]))[0]);
    } catch (err) {
      w.reject(err);
    }
  };

  const write = async (group: Waiting[]): Promise<void> => {
    if (group.length === 1) return alone(group[0]);
    let rows: SessionRow[];
    try {
      rows = await store.createSessions(group.map((w) => w.args));
    } catch {
      // Rolled back: nothing of the group was written. Each alone, with its own answer.
      await Promise.all(group.map(alone));
      return;
    }
    group.forEach((w, i) => w.resolve(rows[i]));
  };

  const flush = (): void => {
    scheduled = false;
    if (writing || queue.length === 0) return;
    const group = queue;
    queue = [];
    writing = true;
    void write(group).finally(() => {
      writing = false;
      schedule();
    });
  };

  // After the current batch of I/O: the creations it started join the group.
  const schedule = (): void => {
    if (scheduled || queue.length === 0) return;
    scheduled = true;
    setImmediate(flush);
  };

  return (...args) =>
    new Promise<SessionRow>((resolve, reject) => {
      queue.push({ args, resolve, reject });
      schedule();
    });
}
