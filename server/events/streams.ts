// The open event streams of one server: closing the server ends them, revoking a token closes
// its streams within a second, and streams are capped per token and per customer.
import type { ServerResponse } from 'node:http';
import { DEFAULT_MAX_STREAMS_PER_CUSTOMER, DEFAULT_MAX_STREAMS_PER_TOKEN, errorFrame, type SseOptions, type StreamHandle } from './sse.ts';

/**
 * Where revocations are seen: SQLite's Store (its token generation, and data_version for other
 * processes), or on PostgreSQL the revoked ids re-read after each vad_tokens notification.
 */
export interface RevocationSource {
  readonly tokenGeneration: number;
  dataVersion(): number;
  isTokenActive(id: string): boolean;
}

/** How often open streams' tokens are checked for revocation (revoked streams close within a second). */
const REVOCATION_CHECK_MS = 200;

interface OpenStream {
  handle: StreamHandle;
  tokenId: string;
  customerId: string;
}

/**
 * Open event streams: closing the server ends them; each is tied to its token, so revoking the
 * token (through this process's Store, or by another process such as `vpn-access token revoke`,
 * seen through SQLite's data_version) closes it within a second; and streams are capped per
 * token and per customer.
 */
export class StreamRegistry {
  private readonly open = new Set<OpenStream>();
  private readonly store: RevocationSource | undefined;
  private readonly perToken: number;
  private readonly perCustomer: number;
  private watch: NodeJS.Timeout | undefined;
  private seen = { generation: -1, dataVersion: -1 };

  constructor(store?: RevocationSource, options: Partial<SseOptions> = {}) {
    this.store = store;
    this.perToken = options.maxStreamsPerToken ?? DEFAULT_MAX_STREAMS_PER_TOKEN;
    this.perCustomer = options.maxStreamsPerCustomer ?? DEFAULT_MAX_STREAMS_PER_CUSTOMER;
  }

  /** Which cap a new stream of this caller would exceed, if any. */
  refusal(caller: { tokenId: string; customerId: string }): { scope: 'token' | 'customer'; limit: number } | undefined {
    let token = 0;
    let customer = 0;
    for (const s of this.open) {
      if (s.tokenId === caller.tokenId) token++;
      if (s.customerId === caller.customerId) customer++;
    }
    if (token >= this.perToken) return { scope: 'token', limit: this.perToken };
    if (customer >= this.perCustomer) return { scope: 'customer', limit: this.perCustomer };
    return undefined;
  }

  add(handle: StreamHandle, res: ServerResponse, caller: { tokenId: string; customerId: string } = { tokenId: '', customerId: '' }): void {
    const entry: OpenStream = { handle, tokenId: caller.tokenId, customerId: caller.customerId };
    this.open.add(entry);
    res.on('close', () => {
      this.open.delete(entry);
      if (this.open.size === 0) this.stopWatch();
    });
    this.startWatch();
  }

  get size(): number {
    return this.open.size;
  }

  closeAll(): void {
    for (const s of this.open) s.handle.close();
    this.open.clear();
    this.stopWatch();
  }

  private startWatch(): void {
    if (this.watch || !this.store) return;
    this.seen = { generation: this.store.tokenGeneration, dataVersion: this.store.dataVersion() };
    this.watch = setInterval(() => this.checkRevoked(), REVOCATION_CHECK_MS);
    this.watch.unref();
  }

  private stopWatch(): void {
    if (this.watch) clearInterval(this.watch);
    this.watch = undefined;
  }

  /** Closes the streams of tokens revoked since the last check (cheap when nothing changed). */
  private checkRevoked(): void {
    const store = this.store;
    if (!store) return;
    try {
      const now = { generation: store.tokenGeneration, dataVersion: store.dataVersion() };
      if (now.generation === this.seen.generation && now.dataVersion === this.seen.dataVersion) return;
      this.seen = now;
      const verdict = new Map<string, boolean>();
      for (const s of [...this.open]) {
        if (!s.tokenId) continue;
        let active = verdict.get(s.tokenId);
        if (active === undefined) verdict.set(s.tokenId, (active = store.isTokenActive(s.tokenId)));
        if (active) continue;
        this.open.delete(s);
        s.handle.closeWith(errorFrame({ error: { code: 'unauthorized', message: 'The API token was revoked.', details: {} } }));
      }
    } catch {
      // The database is closing: the server's own close ends the streams.
    }
  }
}
