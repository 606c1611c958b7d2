// One delivery attempt: a POST with the signed body, dialled at the address the egress policy
// allowed (the same rule as the data plane's destinations: server/dataplane/egress.ts), bounded
// by one timeout over the whole exchange. Never throws: the answer is an outcome.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { type EgressPolicy, EgressRefused, resolveDestination } from '../dataplane/egress.ts';

export interface SendResult {
  /** The HTTP status of the answer, null when none came. */
  statusCode: number | null;
  /** Why it failed, when it did (never the secret nor the body). */
  error: string | null;
  ok: boolean;
  /** Refused by the egress policy (not worth retrying soon, but retried like any failure). */
  refused?: boolean;
}

const MAX_ANSWER_BYTES = 4096;

export function postDelivery(url: string, headers: Record<string, string>, body: string, timeoutMs: number, egress: EgressPolicy): Promise<SendResult> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: SendResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    const target = new URL(url);
    // The lookup the socket uses: resolve, check the policy, dial the checked address.
    // Node asks with `all: true` when it may try several addresses (autoSelectFamily): answer
    // the one checked address in the shape asked for.
    const lookup: LookupFunction = (hostname, opts, cb) => {
      const all = (opts as { all?: boolean }).all === true;
      const done = cb as (e: Error | null, a: string | { address: string; family: number }[], f?: number) => void;
      resolveDestination(hostname.replace(/^\[|\]$/g, ''), egress).then(
        ({ address, family }) => (all ? done(null, [{ address, family }]) : done(null, address, family)),
        (err: Error) => (all ? done(err, []) : done(err, '', 4)),
      );
    };
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      target,
      {
        method: 'POST',
        lookup,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'vpn-access-webhooks/1' },
        agent: false,
      },
      (res) => {
        let seen = 0;
        res.on('data', (c: Buffer) => {
          seen += c.length;
          if (seen > MAX_ANSWER_BYTES) res.destroy();
        });
        const status = res.statusCode ?? 0;
        const settle = () => finish({ statusCode: status, ok: status >= 200 && status < 300, error: status >= 200 && status < 300 ? null : `HTTP ${status}` });
        res.on('end', settle);
        res.on('close', settle);
        res.on('error', settle);
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      finish({ statusCode: null, ok: false, error: `timed out after ${timeoutMs} ms` });
    }, timeoutMs);
    req.on('error', (err: Error & { code?: string }) => {
      if (err instanceof EgressRefused || err.code === 'EGRESS_REFUSED') finish({ statusCode: null, ok: false, error: `egress refused: ${err.message}`, refused: true });
      else finish({ statusCode: null, ok: false, error: err.code ? `${err.code}: ${err.message}` : err.message });
    });
    req.end(body);
  });
}

/** Node dials IP literals without calling `lookup`: check those first. */
export async function egressCheck(url: string, egress: EgressPolicy): Promise<string | null> {
  try {
    await resolveDestination(new URL(url).hostname.replace(/^\[|\]$/g, ''), egress);
    return null;
  } catch (err) {
    if (err instanceof EgressRefused) return `egress refused: ${err.message}`;
    return `resolve failed: ${(err as Error).message}`;
  }
}
