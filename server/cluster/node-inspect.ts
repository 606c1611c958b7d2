// Support's questions to the connected nodes: a session's open connections, a session's or a
// client's recent refusals. Asked on read over each node's channel ({type:'inspect', id, ...}),
// answered by the node from its data plane's memory ({type:'inspected', id, ...}). Asking on
// read, rather than nodes pushing every change, keeps no copy on the control plane to go stale
// or be diffed, costs nothing while nobody looks, and a node that is gone simply does not answer
// (named in the answer). A node's answer is untrusted: only well-formed records are kept, capped.
import type { ConnectionView, RefusalDigest, RefusalView, Transport } from '../dataplane/api.ts';

/** What is asked: connections of a session, refusals of a session, or refusals of a client. */
export type InspectQuery =
  | { what: 'connections'; session: string }
  | { what: 'refusals'; session: string }
  | { what: 'refusals'; customer: string; client: string };

export interface NodeAnswer {
  node: string;
  connections?: ConnectionView[];
  refusals?: RefusalDigest;
}

/** How long a read waits for the nodes. */
export const INSPECT_TIMEOUT_MS = 1000;
const MAX_CONNECTIONS = 1024;
const MAX_REFUSALS = 100;
const TRANSPORTS = new Set<Transport>(['ws', 'tcp', 'tls', 'proxy_connect', 'proxy_request', 'socks5']);

interface Linked {
  name: string;
  send(msg: object): void;
}

export class NodeInspect {
  private readonly nodes = new Map<string, Linked>();
  private readonly waiting = new Map<number, { nodeId: string; done(answer: Record<string, unknown> | null): void }>();
  private nextId = 1;

  /** A node's channel opened; the returned function detaches it (its pending questions get no answer). */
  attach(nodeId: string, name: string, send: (msg: object) => void): () => void {
    const linked = { name, send };
    this.nodes.set(nodeId, linked);
    return () => {
      if (this.nodes.get(nodeId) === linked) this.nodes.delete(nodeId);
      for (const w of this.waiting.values()) if (w.nodeId === nodeId) w.done(null);
    };
  }

  has(nodeId: string): boolean {
    return this.nodes.has(nodeId);
  }

  /** A node's `inspected` message. */
  answered(nodeId: string, msg: Record<string, unknown>): void {
    const w = typeof msg.id === 'number' ? this.waiting.get(msg.id) : undefined;
    if (w && w.nodeId === nodeId) w.done(msg);
  }

  /** Asks every connected node; resolves with the answers and the names of those that gave none in time. */
  async ask(query: InspectQuery, timeoutMs = INSPECT_TIMEOUT_MS): Promise<{ answers: NodeAnswer[]; unanswered: string[] }> {
    const asked = [...this.nodes].map(([nodeId, linked]) => this.askOne(nodeId, linked, query, timeoutMs).then((msg) => ({ linked, msg })));
    const answers: NodeAnswer[] = [];
    const unanswered: string[] = [];
    for (const { linked, msg } of await Promise.all(asked)) {
      if (!msg) unanswered.push(linked.name);
      else answers.push({ node: linked.name, ...(query.what === 'connections' ? { connections: connectionsOf(msg.connections) } : { refusals: digestOf(msg.refusals) }) });
    }
    return { answers, unanswered };
  }

  private askOne(nodeId: string, linked: Linked, query: InspectQuery, timeoutMs: number): Promise<Record<string, unknown> | null> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(null), timeoutMs);
      const done = (answer: Record<string, unknown> | null) => {
        clearTimeout(timer);
        this.waiting.delete(id);
        resolve(answer);
      };
      this.waiting.set(id, { nodeId, done });
      try {
        linked.send({ type: 'inspect', id, ...query });
      } catch {
        done(null);
      }
    });
  }
}

const str = (v: unknown, max = 300): string | undefined => (typeof v === 'string' && v.length <= max ? v : undefined);
const count = (v: unknown): number | undefined => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined);
const time = (v: unknown): string | undefined => {
  const s = str(v, 40);
  return s && !Number.isNaN(Date.parse(s)) ? s : undefined;
};
const transport = (v: unknown): Transport | undefined => (TRANSPORTS.has(v as Transport) ? (v as Transport) : undefined);

export function connectionsOf(v: unknown): ConnectionView[] {
  if (!Array.isArray(v)) return [];
  const out: ConnectionView[] = [];
  for (const c of v.slice(0, MAX_CONNECTIONS) as Array<Record<string, unknown>>) {
    const d = (c?.destination ?? {}) as Record<string, unknown>;
    const view = {
      id: str(c?.id, 100), transport: transport(c?.transport), client_address: str(c?.client_address, 100),
      destination: { host: str(d.host), port: count(d.port) },
      uploaded_bytes: count(c?.uploaded_bytes), downloaded_bytes: count(c?.downloaded_bytes),
      upload_speed: count(c?.upload_speed), download_speed: count(c?.download_speed), opened_at: time(c?.opened_at),
    };
    if (Object.values(view).every((x) => x !== undefined) && view.destination.host !== undefined && view.destination.port !== undefined) out.push(view as ConnectionView);
  }
  return out;
}

export function digestOf(v: unknown): RefusalDigest {
  const d = (v ?? {}) as Record<string, unknown>;
  const refusals: RefusalView[] = [];
  for (const r of (Array.isArray(d.refusals) ? d.refusals.slice(0, MAX_REFUSALS) : []) as Array<Record<string, unknown>>) {
    const view = { at: time(r?.at), reason: str(r?.reason, 64), transport: transport(r?.transport), client_address: str(r?.client_address, 100), session_id: str(r?.session_id, 200) };
    if (Object.values(view).every((x) => x !== undefined)) refusals.push(view as RefusalView);
  }
  const counts: Record<string, number> = {};
  const raw = d.counts_last_hour && typeof d.counts_last_hour === 'object' ? Object.entries(d.counts_last_hour as object).slice(0, 64) : [];
  for (const [reason, n] of raw) if (reason.length <= 64 && count(n) !== undefined) counts[reason] = n as number;
  return { refusals, counts_last_hour: counts };
}
