// The node's clock against the control plane's. The control plane's pings (one a second) carry its
// clock in ms. Clocks matter across the cluster: relay keys and grants are made by one node's clock
// and checked by another's (dataplane/relay-grant.ts: a grant more than GRANT_MS off is refused as
// expired), and expiry and usage periods are judged by the control plane's. A node more than
// CLOCK_SKEW_WARN_MS off says so in its log, once, naming the fix, and says again when it is back
// in step.
//
// A ping's time in transit makes the node look ahead (a slow uplink can hold a ping for seconds
// behind a large message), never behind: the estimate is the least of the last WINDOW readings.
import { GRANT_MS } from '../dataplane/relay-grant.ts';
import type { Logger } from '../domain.ts';
import { CLOCK_SKEW_WARN_MS } from '../time.ts';

/** Back in step below this (less than CLOCK_SKEW_WARN_MS, so a clock near the line does not flap). */
const BACK_MS = 2_000;
const WINDOW = 5;

export class ClockWatch {
  readonly #log: Logger;
  readonly #now: () => number;
  /** The last readings of this node's clock less the control plane's, ms. */
  #readings: number[] = [];
  #off = false;

  constructor(log: Logger, now: () => number = Date.now) {
    this.#log = log;
    this.#now = now;
  }

  /**
   * This node's clock less the control plane's, ms, to the second (the node reports it: `node list`
   * and the doctor show it); null until WINDOW pings came.
   */
  skew(): number | null {
    return this.#readings.length < WINDOW ? null : Math.round(Math.min(...this.#readings) / 1000) * 1000 || 0;
  }

  /** A ping's payload: the control plane's clock when it sent it (ms, as text); anything else is ignored. */
  observe(payload: Buffer | string): void {
    const text = String(payload);
    if (!/^\d{1,15}$/.test(text)) return;
    this.#readings.push(this.#now() - Number(text));
    if (this.#readings.length > WINDOW) this.#readings.shift();
    if (this.#readings.length < WINDOW) return;
    const skew = Math.min(...this.#readings);
    const off = Math.abs(skew);
    const secs = Math.round(off / 100) / 10;
    if (!this.#off && off > CLOCK_SKEW_WARN_MS) {
      this.#off = true;
      const where = skew > 0 ? 'ahead of' : 'behind';
      if (off > GRANT_MS) {
        this.#log.error({ skew_ms: skew }, `this node's clock is ${secs} s ${where} the control plane's: geo relays to and from this node refuse its grants as expired, and expiry is judged by the wrong time; run NTP on both machines (timedatectl set-ntp true)`);
      } else {
        this.#log.warn({ skew_ms: skew }, `this node's clock is ${secs} s ${where} the control plane's: run NTP on both machines (timedatectl set-ntp true); geo relays refuse grants more than ${GRANT_MS / 1000} s off`);
      }
    } else if (this.#off && off < BACK_MS) {
      this.#off = false;
      this.#log.info({ skew_ms: skew }, `this node's clock is back in step with the control plane's (${secs} s apart)`);
    }
  }
}
