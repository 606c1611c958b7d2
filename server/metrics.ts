// Prometheus metrics of one server instance, with prom-client: one Registry per
// instance (several servers in one process, as in tests, never share a metric). Served at
// GET /metrics by http/metrics.ts. What is measured, and where it is fed from:
//
//   vad_http_requests_total{method,route,status}            every answered request (onResponse;
//   vad_http_request_duration_seconds{method,route,status}   route is the pattern, never the raw URL)
//   vad_relayed_bytes_total{zone,node,direction}             bytes moved, counted where counters are
//                                                            saved: the local data plane (node "local")
//                                                            and each node's applied reports
//   vad_open_connections{zone,node}                          connections relaying now: the local data
//                                                            plane, and the last report of each node
//                                                            connected to this instance (scrape every
//                                                            instance and sum)
//   vad_admission_refusals_total{reason}                     connections refused at admission (caps,
//                                                            pause, max_sessions, flood...), local data plane
//   vad_event_stream_subscribers                             open event streams of this instance
//   vad_event_delivery_lag_seconds                           from an event's creation to its write on a stream
//   vad_db_query_duration_seconds{op,outcome}                each control-store call (SQLite or PostgreSQL)
//   process_resident_memory_bytes, nodejs_heap_size_used_bytes   the process's memory
//   nodejs_eventloop_lag_seconds{stat}                       the event loop's delay since the previous scrape (p50, p99, max)
// (Not prom-client's collectDefaultMetrics: its open-descriptor count lists /proc/self/fd on every
// scrape, which blocks the event loop for 40-70 ms when a server holds 8,000 relayed connections.)
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry } from './prom.ts';

export interface OpenConnections {
  zone: string;
  node: string;
  count: number;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

type Labels = Record<string, string>;
interface Sample { labels: Labels; value: number; metricName?: string }

/**
 * A labelled counter or histogram of the per-request hot path, kept by the series: prom-client's
 * own children check and hash their labels on every call (measured: the largest cost of the
 * metrics on a status read), these add to numbers a series holds. Registered in the instance's
 * registry and printed in prom-client's format (the same names, labels and lines).
 */
class HotSeries {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly aggregator = 'sum';
  private readonly bounds: readonly number[];
  private readonly series: { labels: Labels; buckets: number[]; sum: number; count: number }[] = [];

  constructor(type: 'counter' | 'histogram', name: string, help: string, registry: Registry, bounds: readonly number[] = []) {
    this.type = type;
    this.name = name;
    this.help = help;
    this.bounds = bounds;
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** One series: `add(v)` counts one observation of v (a counter adds v). */
  child(labels: Labels): { add(v: number): void } {
    const one = { labels, buckets: this.bounds.map(() => 0), sum: 0, count: 0 };
    this.series.push(one);
    const bounds = this.bounds;
    return {
      add(v: number) {
        one.sum += v;
        one.count++;
        for (let i = 0; i < bounds.length; i++) {
          if (v <= bounds[i]) {
            one.buckets[i]++;
            break;
          }
        }
      },
    };
  }

  async get(): Promise<{ name: string; help: string; type: string; values: Sample[]; aggregator: string }> {
    const values: Sample[] = [];
    for (const { labels, buckets, sum, count } of this.series) {
      if (this.type === 'counter') {
        values.push({ labels, value: sum });
        continue;
      }
      let acc = 0;
      this.bounds.forEach((le, i) => values.push({ labels: { le: String(le), ...labels }, value: (acc += buckets[i]), metricName: `${this.name}_bucket` }));
      values.push({ labels: { le: '+Inf', ...labels }, value: count, metricName: `${this.name}_bucket` });
      values.push({ labels, value: sum, metricName: `${this.name}_sum` }, { labels, value: count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: HotSeries;
  private readonly durations: HotSeries;
  private readonly bytes: Counter<'zone' | 'node' | 'direction'>;
  private readonly refusals: Counter<'reason'>;
  private readonly lag: Histogram;
  private readonly db: HotSeries;
  private readonly openSources: Array<() => OpenConnections[]> = [];
  private subscriberSource: () => number = () => 0;
  private readCacheSource: () => number = () => 0;
  private readonly requestChildren = new Map<string, Map<string, Map<number, { count: { add(v: number): void }; time: { add(v: number): void } }>>>();
  private readonly dbChildren = new Map<string, { add(v: number): void }>();
  /** Stops sampling the event loop (the server closed). */
  private readonly stopRuntime: () => void;

  constructor() {
    const registers = [this.registry];
    this.requests = new HotSeries('counter', 'vad_http_requests_total', 'HTTP requests answered, by method, route pattern and status code.', this.registry);
    this.durations = new HotSeries('histogram', 'vad_http_request_duration_seconds', 'Time to answer an HTTP request.', this.registry, LATENCY_BUCKETS);
    this.bytes = new Counter({ name: 'vad_relayed_bytes_total', help: 'Bytes relayed for sessions, by zone, node and direction (up: client to destination).', labelNames: ['zone', 'node', 'direction'], registers });
    this.refusals = new Counter({ name: 'vad_admission_refusals_total', help: 'Connections refused at admission, by reason (caps, pause, max_sessions, connection flood...).', labelNames: ['reason'], registers });
    this.lag = new Histogram({ name: 'vad_event_delivery_lag_seconds', help: 'From an event being recorded to its write on an event stream (live delivery).', buckets: LATENCY_BUCKETS, registers });
    this.db = new HotSeries('histogram', 'vad_db_query_duration_seconds', 'Control-store calls (SQLite or PostgreSQL), by operation and outcome.', this.registry, LATENCY_BUCKETS);
    const sources = this.openSources;
    new Gauge({
      name: 'vad_open_connections',
      help: 'Connections relaying now, by zone and node.',
      labelNames: ['zone', 'node'],
      registers,
      collect() {
        this.reset();
        for (const source of sources) {
          for (const o of source()) this.inc({ zone: o.zone, node: o.node }, o.count);
        }
      },
    });
    this.stopRuntime = runtimeGauges(registers);
    const self = this;
    let hitsSeen = 0;
    new Counter({
      name: 'vad_read_cache_hits_total',
      help: 'Reads answered from this instance\'s read cache (PostgreSQL; 0 with --read-cache off).',
      registers,
      collect() {
        const hits = self.readCacheSource();
        if (hits > hitsSeen) this.inc(hits - hitsSeen);
        hitsSeen = hits;
      },
    });
    new Gauge({
      name: 'vad_event_stream_subscribers',
      help: 'Event streams (Server-Sent Events) open on this instance.',
      registers,
      collect() {
        this.set(self.subscriberSource());
      },
    });
  }

  request(method: string, route: string, status: number, seconds: number): void {
    // The series, looked up by route, then method, then status: no label hashing and no key
    // string built per request (the route's pattern and the method are the same strings every time).
    let byMethod = this.requestChildren.get(route);
    if (!byMethod) this.requestChildren.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let child = byStatus.get(status);
    if (!child) {
      const labels = { method, route, status: String(status) };
      child = { count: this.requests.child(labels), time: this.durations.child(labels) };
      byStatus.set(status, child);
    }
    child.count.add(1);
    child.time.add(seconds);
  }

  moved(zone: string, node: string, up: number, down: number): void {
    if (up > 0) this.bytes.inc({ zone, node, direction: 'up' }, up);
    if (down > 0) this.bytes.inc({ zone, node, direction: 'down' }, down);
  }

  refused(reason: string): void {
    this.refusals.inc({ reason });
  }

  delivered(createdAt: string): void {
    const t = Date.parse(createdAt);
    if (Number.isFinite(t)) this.lag.observe(Math.max(0, Date.now() - t) / 1000);
  }

  dbCall(op: string, outcome: 'ok' | 'error', seconds: number): void {
    const key = `${op} ${outcome}`;
    let child = this.dbChildren.get(key);
    if (!child) {
      child = this.db.child({ op, outcome });
      this.dbChildren.set(key, child);
    }
    child.add(seconds);
  }

  /** Adds a source of open-connection counts read at each scrape. */
  openConnections(source: () => OpenConnections[]): void {
    this.openSources.push(source);
  }

  subscribers(source: () => number): void {
    this.subscriberSource = source;
  }

  /** The read cache's hit count (PostgreSQL), read at each scrape. */
  readCacheHits(source: () => number): void {
    this.readCacheSource = source;
  }

  /** Stops what samples in the background (the event-loop delay); the server closed. */
  close(): void {
    this.stopRuntime();
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/**
 * The control store with every call timed: each method that returns a Promise is observed when
 * it settles (SQLite's answers are already settled, PostgreSQL's are round trips).
 */
export function timedStore<T extends object>(store: T, metrics: Metrics): T {
  // One timed wrapper per method (not a new closure on every call).
  const wrappers = new Map<string, { of: unknown; timed: unknown }>();
  return new Proxy(store, {
    get(target, prop) {
      // Read on the store itself: its getters and private fields see the real object.
      const value = Reflect.get(target, prop) as unknown;
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      const known = wrappers.get(prop);
      if (known && known.of === value) return known.timed;
      const timed = function (this: unknown, ...args: unknown[]) {
        const started = performance.now();
        const out = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (out && typeof (out as Promise<unknown>).then === 'function') {
          (out as Promise<unknown>).then(
            () => metrics.dbCall(prop, 'ok', (performance.now() - started) / 1000),
            () => metrics.dbCall(prop, 'error', (performance.now() - started) / 1000),
          );
        }
        return out;
      };
      wrappers.set(prop, { of: value, timed });
      return timed;
    },
  });
}

/**
 * Synchronous operations (SQLite's Store) as the async seam's settled promises, each timed around
 * its run: the same figure timedStore reports for them, without a proxy or a promise reaction
 * per call (they were a measurable share of a status read).
 */
export function timedSettled(ops: Record<string, unknown>, names: string[], metrics: Metrics): Record<string, (...args: unknown[]) => Promise<unknown>> {
  const out: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
  for (const name of names) {
    const run = ops[name] as (...args: unknown[]) => unknown;
    out[name] = (...args: unknown[]) => {
      const started = performance.now();
      try {
        const value = run(...args);
        metrics.dbCall(name, 'ok', (performance.now() - started) / 1000);
        return Promise.resolve(value);
      } catch (err) {
        metrics.dbCall(name, 'error', (performance.now() - started) / 1000);
        return Promise.reject(err);
      }
    };
  }
  return out;
}

/** Memory and the event loop's delay (sampled every 10 ms; each scrape reads it and starts anew). */
function runtimeGauges(registers: Registry[]): () => void {
  new Gauge({ name: 'process_resident_memory_bytes', help: 'Resident memory of the process.', registers, collect() { this.set(process.memoryUsage.rss()); } });
  new Gauge({ name: 'nodejs_heap_size_used_bytes', help: 'JavaScript heap in use.', registers, collect() { this.set(process.memoryUsage().heapUsed); } });
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  new Gauge({
    name: 'nodejs_eventloop_lag_seconds',
    help: 'Event-loop delay since the previous scrape: median (p50), 99th percentile (p99) and longest (max).',
    labelNames: ['stat'],
    registers,
    collect() {
      // Nothing sampled since the last scrape (the histogram reads NaN then): 0.
      const read = (ns: number) => (delay.count ? ns / 1e9 : 0);
      this.set({ stat: 'p50' }, read(delay.percentile(50)));
      this.set({ stat: 'p99' }, read(delay.percentile(99)));
      this.set({ stat: 'max' }, read(delay.max));
      delay.reset();
    },
  });
  return () => delay.disable();
}
