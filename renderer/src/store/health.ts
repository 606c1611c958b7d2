// When the server last answered. Every platform operation the store calls goes through `track`,
// which notes the time of each answer (an error answer is an answer too; only "could not reach"
// is not), so that during an outage the window can say how old the data on screen is.
let lastAnswer = Date.now();

/** The time (ms) of the server's last answer to any operation. */
export function lastAnswerAt(): number {
  return lastAnswer;
}

const wrapped = new WeakMap<object, object>();

/** The same operations, each noting the time of its answer. */
export function track<T extends object>(ops: T): T {
  const known = wrapped.get(ops);
  if (known) return known as T;
  const out = {} as Record<string, unknown>;
  for (const [name, fn] of Object.entries(ops)) {
    if (typeof fn !== 'function') continue;
    out[name] = async (...args: unknown[]) => {
      try {
        const value = await (fn as (...a: unknown[]) => Promise<unknown>).apply(ops, args);
        lastAnswer = Date.now();
        return value;
      } catch (e) {
        if ((e as { status?: number } | null)?.status !== 0) lastAnswer = Date.now();
        throw e;
      }
    };
  }
  wrapped.set(ops, out);
  return out as T;
}
