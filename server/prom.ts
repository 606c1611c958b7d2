// prom-client's metric classes, imported from their own files: the package's index also loads
// collectDefaultMetrics and, through it, @opentelemetry/api, a seventh of a `serve` start-up for
// nothing the server uses (metrics.ts exports the process figures itself). They are the very modules
// the index re-exports, so the same classes. The package's types cover its index only: typed here.
import type * as Prom from 'prom-client';
// @ts-expect-error -- untyped path, typed below
import CounterClass from 'prom-client/lib/counter.js';
// @ts-expect-error -- untyped path, typed below
import GaugeClass from 'prom-client/lib/gauge.js';
// @ts-expect-error -- untyped path, typed below
import HistogramClass from 'prom-client/lib/histogram.js';
// @ts-expect-error -- untyped path, typed below
import RegistryClass from 'prom-client/lib/registry.js';

export const Counter = CounterClass as typeof Prom.Counter;
export type Counter<T extends string = string> = Prom.Counter<T>;
export const Gauge = GaugeClass as typeof Prom.Gauge;
export type Gauge<T extends string = string> = Prom.Gauge<T>;
export const Histogram = HistogramClass as typeof Prom.Histogram;
export type Histogram<T extends string = string> = Prom.Histogram<T>;
export const Registry = RegistryClass as typeof Prom.Registry;
export type Registry = Prom.Registry;
