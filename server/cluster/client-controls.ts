// Clients (extension) on a data plane fed from a remote database (cluster/local-view.ts): each
// client's record (disabled, expiry, override, usage reset) cached for the synchronous reads of
// the data plane, loaded with a session before admission and read again when the customer's
// limits or clients change (the `vad_limits` notice).
import type { ClientControl } from '../domain.ts';

type Read = (customerId: string, clientId: string) => Promise<ClientControl | undefined>;

export class ClientControls {
  private readonly read: Read;
  /** By customer, then client id; null: read, nothing set. */
  private readonly byCustomer = new Map<string, Map<string, ClientControl | null>>();

  constructor(read: Read) {
    this.read = read;
  }

  get(customerId: string, clientId: string): ClientControl | undefined {
    return this.byCustomer.get(customerId)?.get(clientId) ?? undefined;
  }

  async load(customerId: string, clientId: string): Promise<void> {
    const control = await this.read(customerId, clientId);
    let clients = this.byCustomer.get(customerId);
    if (!clients) this.byCustomer.set(customerId, (clients = new Map()));
    clients.set(clientId, control ?? null);
  }

  /** Reads again every client of the customer cached here. */
  async reload(customerId: string): Promise<void> {
    const clients = this.byCustomer.get(customerId);
    if (clients) await Promise.all([...clients.keys()].map((clientId) => this.load(customerId, clientId)));
  }
}
