// One owner for everything the main process starts (the embedded server, IPC handlers, the
// tray, event streams): each is added as it is made, and dispose() releases them in reverse
// order, the last made first, as VS Code's DisposableStore does. One failure does not keep the
// rest from being released; the failures are thrown together at the end.

/** Anything that can be released; a plain function counts as its own dispose. */
export interface Disposable {
  dispose(): void | Promise<void>;
}
export type DisposeFn = () => void | Promise<void>;

export class DisposableStore implements Disposable {
  #items: Array<Disposable | DisposeFn> = [];
  #disposing: Promise<void> | null = null;

  get isDisposed(): boolean {
    return this.#disposing !== null;
  }

  /**
   * Adds one thing to release; returns it, so `const x = store.add(new X())` reads naturally.
   * Added after dispose() it is released at once (a late starter must not outlive the store).
   */
  add<T extends Disposable | DisposeFn>(item: T): T {
    if (this.#disposing) {
      void release(item).catch((e: unknown) => console.error('released late, and it failed:', e));
      return item;
    }
    this.#items.push(item);
    return item;
  }

  /** Releases everything, last added first, each awaited before the next. Calling again waits for the first call. */
  dispose(): Promise<void> {
    this.#disposing ??= this.#release();
    return this.#disposing;
  }

  async #release(): Promise<void> {
    const errors: unknown[] = [];
    while (this.#items.length) {
      const item = this.#items.pop()!;
      try {
        await release(item);
      } catch (e) {
        errors.push(e);
      }
    }
    if (errors.length === 1) throw errors[0];
    if (errors.length) throw new AggregateError(errors, `${errors.length} disposables failed to release`);
  }
}

async function release(item: Disposable | DisposeFn): Promise<void> {
  if (typeof item === 'function') await item();
  else await item.dispose();
}
