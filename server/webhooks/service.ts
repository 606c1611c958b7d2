// Webhooks: the endpoints an owner registers (CRUD, URL checks, the secret shown once) and the
// sender that drains the durable outbox (server/store/repos/webhook-deliveries.ts). Nothing here holds a
// delivery only in memory: every event is in the database before anything is sent, each
// delivery keeps its id across attempts and restarts (at-least-once with a stable
// X-VAD-Delivery), and a session's deliveries to one endpoint go out one after the other.
//
// The loop, every `pollMs`: copy new session events from the event log into the outbox
// (fanOut), lease the due deliveries (at most one per endpoint and session), POST each signed,
// record the answer; a failure is retried after an exponential backoff (baseDelayMs · 2^(n-1),
// at most maxDelayMs) until maxAttempts, then the delivery is `failed` and the next one of its
// session goes.
import { randomUUID } from 'node:crypto';
import { ApiError } from '../contract/errors.ts';
import type { Webhook, WebhookCreate, WebhookDelivery, WebhookEventKind, WebhookTestResult, WebhookUpdate } from '../contract/webhooks.ts';
import type { EgressPolicy } from '../dataplane/egress.ts';
import type { Logger } from '../domain.ts';
import { isoNow } from '../time.ts';
import type { DueDelivery, WebhookRow, WebhookStore } from '../store/repos/webhooks.ts';
import type { QueuedWith } from '../store/repos/thresholds.ts';
import type { AuditTrail } from '../audit/trail.ts';
import { generateSecret, SecretBox } from './secret.ts';
import { sendSigned } from './send.ts';
import { sendTest } from './probe.ts';
import { announceDisabled } from './disabled.ts';
import { deliveryView, queuedKind, toQueued, view } from './views.ts';

export interface WebhookOptions {
  /** How often the outbox is read (ms). Default 500. */
  pollMs?: number;
  /** First retry delay (ms); doubles each attempt. Default 2,000. */
  baseDelayMs?: number;
  /** Longest retry delay (ms). Default 1 hour. */
  maxDelayMs?: number;
  /** Attempts before a delivery is marked failed. Default 10. */
  maxAttempts?: number;
  /** Timeout of one attempt, connection to answer (ms). Default 10,000. */
  timeoutMs?: number;
  /** Where deliveries may go; default: the server's egress policy (public-only unless set). */
  egress?: EgressPolicy;
  /** The 32-byte key that encrypts secrets; default: `<data folder>/webhook.key`. */
  key?: Buffer;
  /** Endpoints per customer. Default 20. */
  maxPerCustomer?: number;
  /** Pending deliveries kept per endpoint; beyond it the oldest are dropped (and counted). Default 1,000. */
  maxPendingPerEndpoint?: number;
  /** An endpoint is disabled after this many failed attempts in a row. Default 50. */
  disableAfterFailures?: number;
  /** An endpoint is disabled once it has failed for this long without a success (ms). Default 24 hours. */
  disableAfterMs?: number;
}

/** Other features (quotas: caps and expiry) queue their events here. */
export interface WebhookEmitter {
  emit(customerId: string, kind: WebhookEventKind, data: Record<string, unknown>, sessionId?: string): Promise<void>;
}

const LEASE_MARGIN_MS = 5_000;
/** Finished deliveries are kept this long (the API and Settings show the last ones), then pruned. */
const KEEP_FINISHED_MS = 7 * 24 * 3_600_000;
const PRUNE_EVERY_MS = 3_600_000;
const PRUNE_BATCH = 5_000;
const CLAIM_BATCH = 32;
const FANOUT_BATCH = 500;

export class WebhookService implements WebhookEmitter {
  readonly store: WebhookStore;
  private readonly box: SecretBox;
  private readonly log: Logger;
  private readonly o: Required<Omit<WebhookOptions, 'key' | 'egress'>> & { egress: EgressPolicy };
  private readonly audit: Pick<AuditTrail, 'record'> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly inFlight = new Set<Promise<void>>();
  private lastPrune = 0;

  constructor(store: WebhookStore, key: Buffer, log: Logger, opts: WebhookOptions & { egress: EgressPolicy }, audit?: Pick<AuditTrail, 'record'>) {
    this.store = store;
    this.audit = audit;
    this.box = new SecretBox(key);
    this.log = log;
    this.o = {
      pollMs: opts.pollMs ?? 500,
      baseDelayMs: opts.baseDelayMs ?? 2_000,
      maxDelayMs: opts.maxDelayMs ?? 3_600_000,
      maxAttempts: opts.maxAttempts ?? 10,
      timeoutMs: opts.timeoutMs ?? 10_000,
      maxPerCustomer: opts.maxPerCustomer ?? 20,
      maxPendingPerEndpoint: opts.maxPendingPerEndpoint ?? 1_000,
      disableAfterFailures: opts.disableAfterFailures ?? 50,
      disableAfterMs: opts.disableAfterMs ?? 24 * 3_600_000,
      egress: opts.egress,
    };
  }

  // ---- endpoints ----

  async create(customerId: string, body: WebhookCreate): Promise<Webhook & { secret: string }> {
    checkUrl(body.url);
    if ((await this.store.count(customerId)) >= this.o.maxPerCustomer) {
      throw new ApiError('invalid_request', `A customer may register at most ${this.o.maxPerCustomer} webhooks.`, { limit: this.o.maxPerCustomer });
    }
    const secret = body.secret ?? generateSecret();
    const now = isoNow();
    const row: WebhookRow = {
      id: randomUUID(),
      customer_id: customerId,
      url: body.url,
      events: [...body.events],
      enabled: body.enabled ?? true,
      secret_enc: this.box.seal(secret),
      secret_prefix: secret.slice(0, secret.startsWith('whsec_') ? 10 : 4),
      created_at: now,
      updated_at: now,
      consecutive_failures: 0,
      failing_since: null,
      disabled_reason: null,
      disabled_at: null,
      dropped: 0,
      last_error: null,
      last_error_at: null,
      next_retry_at: null,
    };
    await this.store.create(row);
    return { ...view(row), secret };
  }

  async list(customerId: string): Promise<Webhook[]> {
    return (await this.store.list(customerId)).map(view);
  }

  async get(customerId: string, id: string): Promise<Webhook> {
    const row = await this.store.get(customerId, id);
    if (!row) throw notFound(id);
    return view(row);
  }

  async update(customerId: string, id: string, patch: WebhookUpdate): Promise<Webhook> {
    if (patch.url !== undefined) checkUrl(patch.url);
    const row = await this.store.update(customerId, id, patch, isoNow());
    if (!row) throw notFound(id);
    return view(row);
  }

  async delete(customerId: string, id: string): Promise<void> {
    if (!(await this.store.delete(customerId, id))) throw notFound(id);
  }

  async deliveries(customerId: string, id: string, limit = 50): Promise<WebhookDelivery[]> {
    if (!(await this.store.get(customerId, id))) throw notFound(id);
    return (await this.store.deliveries(customerId, id, limit)).map(deliveryView);
  }

  /** Sends one signed `test` delivery now and waits for its answer: not queued, not counted in the endpoint's health. */
  async test(customerId: string, id: string): Promise<WebhookTestResult> {
    const row = await this.store.get(customerId, id);
    if (!row) throw notFound(id);
    return sendTest(row, this.box, { timeoutMs: this.o.timeoutMs, egress: this.o.egress, log: this.log });
  }

  // ---- events ----

  /** Queues an event of a kind outside the event log (pause, resume, limits, caps, expiry). */
  async emit(customerId: string, kind: WebhookEventKind, data: Record<string, unknown>, sessionId?: string): Promise<void> {
    await this.store.enqueue(queuedKind(customerId, kind, data, sessionId), Date.now(), this.o.maxPendingPerEndpoint);
    this.kick();
  }

  /**
   * The outbox entry of an event another store operation queues in its own transaction (a usage
   * threshold crossed: store/repos/thresholds.ts), with the outbox's bounds; wake() after its commit.
   */
  outboxEntry(customerId: string, kind: WebhookEventKind, data: Record<string, unknown>, sessionId?: string): QueuedWith {
    return { event: queuedKind(customerId, kind, data, sessionId), now: Date.now(), maxPending: this.o.maxPendingPerEndpoint };
  }

  /** An entry of outboxEntry() was committed: the sender runs soon. */
  wake(): void {
    this.kick();
  }

  /**
   * emit() that logs instead of failing the caller. Routes await it after their change is made
   * and before they answer, so changes made one after the other are queued in that order.
   */
  emitQuietly(customerId: string, kind: WebhookEventKind, data: Record<string, unknown>, sessionId?: string): Promise<void> {
    return this.emit(customerId, kind, data, sessionId).catch((err: unknown) => this.log.warn({ err: String(err), kind }, 'queueing a webhook event failed'));
  }

  // ---- the sender ----

  async start(): Promise<void> {
    await this.store.releaseLeases();
    this.schedule(0);
  }

  /** Runs a pass soon (an event was just queued). */
  kick(): void {
    if (!this.stopped && !this.running) this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.running = this.pass()
        .catch((err: unknown) => this.log.warn({ err: String(err) }, 'webhook outbox pass failed; retrying'))
        .finally(() => {
          this.running = undefined;
          this.schedule(this.o.pollMs);
        });
    }, ms);
    this.timer.unref();
  }

  /** One pass: fan out new events, then send what is due (bounded batches). */
  async pass(): Promise<void> {
    for (let i = 0; i < 10 && (await this.store.fanOut(toQueued, FANOUT_BATCH, Date.now(), this.o.maxPendingPerEndpoint)) === FANOUT_BATCH; i++);
    if (Date.now() - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = Date.now();
      await this.store.prune(new Date(Date.now() - KEEP_FINISHED_MS).toISOString(), PRUNE_BATCH);
    }
    const due = await this.store.claimDue(Date.now(), this.o.timeoutMs + LEASE_MARGIN_MS, CLAIM_BATCH);
    await Promise.all(due.map((d) => this.track(this.attempt(d))));
  }

  private track(p: Promise<void>): Promise<void> {
    this.inFlight.add(p);
    return p.finally(() => this.inFlight.delete(p));
  }

  private async attempt(d: DueDelivery): Promise<void> {
    let secret: string;
    try {
      secret = this.box.open(d.secret_enc);
    } catch {
      await this.store.complete(d.seq, { kind: 'failed', statusCode: null, error: 'the signing secret cannot be decrypted with this server\'s webhook key' });
      return;
    }
    const result = await sendSigned({ url: d.url, secret, id: d.id, event: d.event_type, body: d.body }, this.o.timeoutMs, this.o.egress);
    const attempts = d.attempts + 1;
    if (result.ok) {
      await this.store.complete(d.seq, { kind: 'delivered', statusCode: result.statusCode!, at: isoNow() });
      await this.store.recordSuccess(d.webhook_id);
      return;
    }
    const where = { webhook: d.webhook_id.slice(0, 8), delivery: d.id.slice(0, 8), attempts };
    if (result.refused) {
      // A policy refusal will not change by waiting: failed at once, so the session's next delivery goes.
      // The address refused is for the server log only (the owner reads REFUSED_ERROR).
      await this.store.complete(d.seq, { kind: 'failed', statusCode: null, error: result.error! });
      this.log.warn({ ...where, detail: result.detail }, 'webhook delivery refused by the egress policy');
    } else if (attempts >= this.o.maxAttempts) {
      await this.store.complete(d.seq, { kind: 'failed', statusCode: result.statusCode, error: result.error ?? 'failed' });
      this.log.warn({ ...where, error: result.error, detail: result.detail }, 'webhook delivery failed for good');
    } else {
      const delay = Math.min(this.o.baseDelayMs * 2 ** (attempts - 1), this.o.maxDelayMs);
      await this.store.complete(d.seq, { kind: 'retry', statusCode: result.statusCode, error: result.error ?? 'failed', nextAttemptAt: Date.now() + delay });
    }
    const rule = { maxFailures: this.o.disableAfterFailures, maxFailingMs: this.o.disableAfterMs };
    const disabled = await this.store.recordFailure(d.webhook_id, new Date(), rule, result.error ?? 'failed');
    if (disabled) await announceDisabled(disabled, { log: this.log, audit: this.audit, emit: (c, k, data) => this.emitQuietly(c, k, data) });
  }

  /** Stops the loop and waits for attempts in flight (their outcome is recorded; none is lost). */
  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    await Promise.allSettled([...this.inFlight]);
  }
}

function notFound(id: string): ApiError {
  return new ApiError('not_found', 'No webhook with this id.', { resource: 'webhook', id: id.slice(0, 8) });
}

/** http:// or https:// with a host, no user name or password in it. */
export function checkUrl(url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw badUrl('is not an absolute URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw badUrl(`scheme ${u.protocol.replace(':', '')} is not allowed (http or https only)`);
  if (!u.hostname) throw badUrl('has no host');
  if (u.username || u.password) throw badUrl('must not carry a user name or password (sign with the secret instead)');
}

function badUrl(problem: string): ApiError {
  return new ApiError('invalid_request', `Invalid request: url ${problem}.`, { location: 'body', fields: [{ field: 'url', problem }] });
}
