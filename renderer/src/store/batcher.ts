// Hands items over in batches: the first item of a burst starts a timer, and everything that
// arrives before it fires is handed over at once, so a burst of stream events costs one render.
// The bridge (the app's event stream) and the session timeline (history slice) both use it.

export interface Batcher<T> {
  push(item: T): void;
  /** Drops what waits and stops the timer. */
  cancel(): void;
}

export function batcher<T>(ms: number, flush: (batch: T[]) => void): Batcher<T> {
  let pending: T[] = [];
  let timer: ReturnType<typeof setTimeout> | null = null;
  return {
    push(item) {
      pending.push(item);
      if (!timer)
        timer = setTimeout(() => {
          timer = null;
          const batch = pending;
          pending = [];
          flush(batch);
        }, ms);
    },
    cancel() {
      if (timer) clearTimeout(timer);
      timer = null;
      pending = [];
    },
  };
}
