// The data plane's runtime reports a session's counters as absolute totals (RuntimePatch); a
// store that ADDS bytes to shared counters (the PostgreSQL view of a serve instance, a node
// reporting to its control plane) needs the bytes moved since the last report instead. This
// keeps, per session, the totals already accounted for.
import type { RuntimePatch } from '../domain.ts';

export interface Counters {
  up: number;
  down: number;
}

export class CounterBaselines {
  readonly #base = new Map<string, Counters>();

  /**
   * The totals the runtime starts a session from: its stored counters plus what is accounted
   * for but not yet written (`unwritten`); they become the session's baseline.
   */
  start(id: string, stored: Counters, unwritten?: Partial<Counters>): Counters {
    const start = { up: stored.up + (unwritten?.up ?? 0), down: stored.down + (unwritten?.down ?? 0) };
    this.#base.set(id, start);
    return start;
  }

  /** The bytes moved since the baseline by the patch's totals (never negative); the baseline moves up to them. */
  advance(id: string, patch: RuntimePatch): Counters {
    const base = this.#base.get(id) ?? { up: 0, down: 0 };
    const up = patch.uploaded_bytes ?? base.up;
    const down = patch.downloaded_bytes ?? base.down;
    this.#base.set(id, { up: Math.max(up, base.up), down: Math.max(down, base.down) });
    return { up: Math.max(0, up - base.up), down: Math.max(0, down - base.down) };
  }

  forget(id: string): void {
    this.#base.delete(id);
  }
}
