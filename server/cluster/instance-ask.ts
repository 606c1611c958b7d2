// Support reads across the control-plane instances of a cluster (PostgreSQL): each instance has
// its own data plane (for `local` zones) and its own connected nodes, so a read on one instance
// asks the others over the database. The asker NOTIFYs vad_support_ask with a small question
// (request id, asker, what, customer id, session id or client id: never a token); every other
// instance that hears it gathers ITS data plane and ITS connected nodes (the same path as for
// its own reads), writes the answer to support_answers (it can exceed NOTIFY's 8000 bytes) and
// announces it on vad_support_answers. The asker waits at most its budget (1 s), reads and
// deletes its rows, and names the instances seen lately (control_instances, marked every 20 s)
// that did not answer. Unread rows are swept after a minute. SQLite (one process) has none of this.
import { randomUUID } from 'node:crypto';
import type { Logger } from '../domain.ts';
import type { ControlStore } from '../store/control.ts';
import { CHANNELS } from '../store/sql/channels.ts';
import { connectionsOf, digestOf, INSPECT_TIMEOUT_MS, type InspectQuery, type NodeAnswer } from './node-inspect.ts';

/** How often an instance marks itself seen (and sweeps). */
export const SEEN_EVERY_MS = 20_000;
/** Instances seen within this are asked, and named when silent. */
const SEEN_WITHIN_MS = 60_000;
const ANSWERS_KEPT_MS = 60_000;
const INSTANCES_KEPT_MS = 24 * 3_600_000;
/** What an answering instance leaves its nodes, within the asker's second. */
const NODE_WAIT_MS = 600;
const MAX_QUESTION = 1000;
const MAX_ID = 200;
const MAX_PARTS = 1000;
/** Named in place of the instances when the database could not be reached to ask them. */
export const UNREACHED = '*';

/** What this instance gathers itself: its own data plane and the nodes connected to it. */
export type Gather = (customerId: string, query: InspectQuery, timeoutMs: number) => Promise<{ parts: NodeAnswer[]; unanswered: string[] }>;

export interface InstanceAnswer {
  instance: string;
  parts: NodeAnswer[];
  unanswered: string[];
}

export interface InstanceAskDeps {
  instanceId: string;
  data: Pick<ControlStore, 'seeInstance' | 'instancesSeenSince' | 'askInstances' | 'putSupportAnswer' | 'takeSupportAnswers' | 'sweepSupport'>;
  onNotification(fn: (channel: string, payload: string) => void): () => void;
  gather: Gather;
  log: Logger;
}

type Question = { r: string; from: string; customer: string } & InspectQuery;

const iso = (ms: number) => new Date(ms).toISOString();
const id = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= MAX_ID;

export class InstanceAsk {
  private readonly deps: InstanceAskDeps;
  private readonly waiting = new Map<string, (instance: string) => void>();
  private timer: NodeJS.Timeout | undefined;
  private unlisten: (() => void) | undefined;

  constructor(deps: InstanceAskDeps) {
    this.deps = deps;
  }

  get instanceId(): string {
    return this.deps.instanceId;
  }

  /** Marks this instance seen (then every SEEN_EVERY_MS, with a sweep) and answers the others' questions. */
  async start(): Promise<void> {
    this.unlisten = this.deps.onNotification((channel, payload) => this.heard(channel, payload));
    await this.mark();
    this.timer = setInterval(() => void this.mark(), SEEN_EVERY_MS);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
    this.unlisten?.();
  }

  /**
   * Asks every other instance seen lately; their answers, and the ids of those silent within
   * `timeoutMs`. The database unreachable: no answers, and `*` (the others could not be asked).
   */
  async ask(customerId: string, query: InspectQuery, timeoutMs = INSPECT_TIMEOUT_MS): Promise<{ answers: InstanceAnswer[]; unanswered: string[] }> {
    try {
      return await this.askAll(customerId, query, timeoutMs);
    } catch (err) {
      this.deps.log.warn({ err: String(err) }, 'asking the other instances for a support read failed');
      return { answers: [], unanswered: [UNREACHED] };
    }
  }

  private async askAll(customerId: string, query: InspectQuery, timeoutMs: number): Promise<{ answers: InstanceAnswer[]; unanswered: string[] }> {
    const started = Date.now();
    const expected = (await this.deps.data.instancesSeenSince(iso(started - SEEN_WITHIN_MS))).filter((i) => i !== this.deps.instanceId);
    if (!expected.length) return { answers: [], unanswered: [] };
    const r = randomUUID();
    const heard = new Set<string>();
    const all = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, timeoutMs - (Date.now() - started)));
      this.waiting.set(r, (instance) => {
        heard.add(instance);
        if (expected.every((i) => heard.has(i))) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    try {
      const question: Question = { r, from: this.deps.instanceId, customer: customerId, ...query };
      await this.deps.data.askInstances(JSON.stringify(question));
      await all;
    } finally {
      this.waiting.delete(r);
    }
    const answers = (await this.deps.data.takeSupportAnswers(r)).map((row) => answerOf(row.instance_id, row.body));
    const answered = new Set(answers.map((a) => a.instance));
    return { answers, unanswered: expected.filter((i) => !answered.has(i)) };
  }

  private async mark(): Promise<void> {
    const now = Date.now();
    try {
      await this.deps.data.seeInstance(this.deps.instanceId, iso(now));
      await this.deps.data.sweepSupport(iso(now - ANSWERS_KEPT_MS), iso(now - INSTANCES_KEPT_MS));
    } catch (err) {
      this.deps.log.warn({ err: String(err) }, 'marking this instance for support reads failed');
    }
  }

  private heard(channel: string, payload: string): void {
    if (channel === CHANNELS.supportAnswers) {
      const [r, instance] = payload.split(' ');
      this.waiting.get(r)?.(instance ?? '');
    } else if (channel === CHANNELS.supportAsk) {
      const q = questionOf(payload);
      if (q && q.from !== this.deps.instanceId) void this.answer(q);
    }
  }

  /** Gathers this instance's own data plane and nodes for another instance's question, and stores the answer. */
  private async answer(q: Question): Promise<void> {
    const query: InspectQuery = 'session' in q ? { what: q.what, session: q.session } as InspectQuery : { what: 'refusals', customer: q.customer, client: q.client };
    try {
      const { parts, unanswered } = await this.deps.gather(q.customer, query, NODE_WAIT_MS);
      await this.deps.data.putSupportAnswer(q.r, this.deps.instanceId, JSON.stringify({ parts, unanswered }), iso(Date.now()));
    } catch (err) {
      this.deps.log.warn({ err: String(err) }, 'answering another instance\'s support read failed');
    }
  }
}

/** A question heard on vad_support_ask, when well formed (bounded, ids only). */
function questionOf(payload: string): Question | null {
  if (payload.length > MAX_QUESTION) return null;
  let q: Record<string, unknown>;
  try {
    q = JSON.parse(payload) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (!q || !id(q.r) || !id(q.from) || !id(q.customer)) return null;
  if ((q.what === 'connections' || q.what === 'refusals') && id(q.session)) return { r: q.r, from: q.from, customer: q.customer, what: q.what, session: q.session } as Question;
  if (q.what === 'refusals' && id(q.client)) return { r: q.r, from: q.from, customer: q.customer, what: 'refusals', client: q.client };
  return null;
}

/** One instance's stored answer, its records checked as a node's are (cluster/node-inspect.ts). */
function answerOf(instance: string, body: string): InstanceAnswer {
  let a: Record<string, unknown> = {};
  try {
    a = (JSON.parse(body) ?? {}) as Record<string, unknown>;
  } catch {
    // an unreadable answer counts as an empty one
  }
  const parts: NodeAnswer[] = [];
  for (const p of (Array.isArray(a.parts) ? a.parts.slice(0, MAX_PARTS) : []) as Array<Record<string, unknown>>) {
    if (!id(p?.node)) continue;
    parts.push({ node: p.node, ...(p.connections !== undefined ? { connections: connectionsOf(p.connections) } : {}), ...(p.refusals !== undefined ? { refusals: digestOf(p.refusals) } : {}) });
  }
  const unanswered = (Array.isArray(a.unanswered) ? a.unanswered.slice(0, MAX_PARTS) : []).filter(id);
  return { instance, parts, unanswered };
}
