// One server's change fan-out: a pause, a limits change, a repaired or removed node stored by
// this instance (or, on PostgreSQL, announced by another instance's NOTIFY) wakes the node
// channels of this server, which re-send their state at once (server/cluster/node-channel.ts).
// One per Services instance: two servers built in one process never hear each other.

export class ChangeFeed {
  private readonly listeners = new Set<() => void>();

  /** Something the nodes' state is built from changed. */
  emit(): void {
    for (const listener of [...this.listeners]) listener();
  }

  /** Calls `listener` on every change until the returned function is called. */
  on(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  get size(): number {
    return this.listeners.size;
  }
}
