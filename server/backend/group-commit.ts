// Group commit of session creations on SQLite. A creation is one transaction (its row, its
// placement, its audit record); under load most of its cost was that transaction's BEGIN and
// COMMIT (and the WAL pages each commit writes), not the rows. The creations asked for while the
// event loop handles one batch of I/O are written together, after it, in ONE transaction, and
// each caller's promise settles only once that transaction has committed: an answered creation
// is as durable as before, and nothing else runs inside the group's transaction (it is opened,
// filled and committed in one synchronous step). A creation that fails inside the group rolls
// the whole group back; each is then written alone, in its own transaction, as before, so one
// bad creation fails only itself.
import type { SessionRow } from '../domain.ts';
import type { AuditInsert, NewSession, Store } from '../store/store.ts';

type CreateArgs = [s: NewSession, nodeId: string | null, audit: AuditInsert | null];

interface Waiting {
  args: CreateArgs;
  resolve: (row: SessionRow) => void;
  reject: (err: unknown) => void;
}

/** `store.createSession` behind a promise that settles after the group's commit. */
export function groupedCreations(store: Store): (...args: CreateArgs) => Promise<SessionRow> {
  let queue: Waiting[] = [];

  const alone = (w: Waiting): void => {
    try {
      w.resolve(store.createSession(...w.args));
    } catch (err) {
      w.reject(err);
    }
  };

  const flush = (): void => {
    const group = queue;
    queue = [];
    if (group.length === 1) return alone(group[0]);
    let rows: SessionRow[];
    try {
      rows = store.transaction(() => group.map((w) => store.createSession(...w.args)));
    } catch {
      // Rolled back: nothing of the group was written. Each alone, with its own answer.
      for (const w of group) alone(w);
      return;
    }
    group.forEach((w, i) => w.resolve(rows[i]));
  };

  return (...args) =>
    new Promise<SessionRow>((resolve, reject) => {
      // After the current I/O batch: the creations it started join this group.
      if (queue.push({ args, resolve, reject }) === 1) setImmediate(flush);
    });
}
