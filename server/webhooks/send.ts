// One delivery attempt: a POST with the signed body, dialled at the address the egress policy
// allowed (the same rule as the data plane's destinations: server/dataplane/egress.ts), bounded
// by one timeout over the whole exchange. Never throws: the answer is an outcome.
//
// What the owner reads of a failure (the deliveries API, the UI) names no address: the address a
// name resolved to on the server, or that a policy refused, would make the endpoint URL an
// oracle of the server's DNS and network. The full story (`detail`) is for the server log only.
import { isIP, type LookupFunction } from 'node:net';
import { type EgressPolicy, EgressRefused, resolveDestination } from '../dataplane/egress.ts';
import { requestFor } from '../outbound.ts';
import { signatureHeader } from './secret.ts';

export interface SendResult {
  /** The HTTP status of the answer, null when none came. */
  statusCode: number | null;
  /** Why it failed, when it did, as the owner may read it (never an address, the secret or the body). */
  error: string | null;
  ok: boolean;
  /** Refused by the egress policy: failed at once, never retried. */
  refused?: boolean;
  /** The full reason, for the server log only (it may name addresses). */
  detail?: string;
}

/** What the owner reads of a delivery refused by the egress policy. */
export const REFUSED_ERROR = 'destination refused by the server\'s egress policy';

const ERROR_TEXT: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  ENOTFOUND: 'the host name did not resolve',
  EAI_AGAIN: 'the host name did not resolve (temporary failure)',
  EPROTO: 'TLS handshake failed',
  CERT_HAS_EXPIRED: 'the TLS certificate has expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'the TLS certificate is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'the TLS certificate chain is self-signed',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'the TLS certificate cannot be verified',
  ERR_TLS_CERT_ALTNAME_INVALID: 'the TLS certificate does not name this host',
};

/** A connection error as the owner may read it: its code and a fixed text, never the message (it names addresses). */
export function publicError(err: Error & { code?: string }): string {
  if (err.code === undefined) return 'the connection failed';
  return `${err.code}: ${ERROR_TEXT[err.code] ?? 'the connection failed'}`;
}

/** An error stored before this rule, as the owner may read it now. */
export function shownError(stored: string | null): string | null {
  if (stored === null) return null;
  if (stored.startsWith('egress refused')) return REFUSED_ERROR;
  if (/\d+\.\d+\.\d+\.\d+|\b[0-9a-f]{1,4}(:[0-9a-f]{0,4}){2,7}|::/i.test(stored)) {
    const code = /^[A-Z][A-Z0-9_]*(?=:)/.exec(stored)?.[0];
    return code ? `${code}: the connection failed` : 'the connection failed';
  }
  return stored;
}

const MAX_ANSWER_BYTES = 4096;

export async function postDelivery(url: string, headers: Record<string, string>, body: string, timeoutMs: number, egress: EgressPolicy): Promise<SendResult> {
  const target = new URL(url);
  const send = await requestFor(target.href);
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: SendResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
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
      if (err instanceof EgressRefused || err.code === 'EGRESS_REFUSED') finish({ statusCode: null, ok: false, error: REFUSED_ERROR, refused: true, detail: `egress refused: ${err.message}` });
      else finish({ statusCode: null, ok: false, error: publicError(err), detail: err.message });
    });
    req.end(body);
  });
}

/** Node dials IP literals without calling `lookup`: check those first (null: allowed). */
export async function egressCheck(url: string, egress: EgressPolicy): Promise<SendResult | null> {
  try {
    await resolveDestination(new URL(url).hostname.replace(/^\[|\]$/g, ''), egress);
    return null;
  } catch (err) {
    if (err instanceof EgressRefused) return { statusCode: null, ok: false, error: REFUSED_ERROR, refused: true, detail: `egress refused: ${err.message}` };
    return { statusCode: null, ok: false, error: publicError(err as Error), detail: `resolve failed: ${(err as Error).message}` };
  }
}

/** One signed delivery, as every delivery (queued or a test) is sent. */
export interface Signed {
  url: string;
  /** The signing secret, in clear. */
  secret: string;
  /** X-VAD-Delivery and X-VAD-Event. */
  id: string;
  event: string;
  body: string;
}

/** Sends one signed delivery under the egress policy (IP literals checked first: Node dials them without `lookup`). */
export async function sendSigned(d: Signed, timeoutMs: number, egress: EgressPolicy): Promise<SendResult> {
  const refused = isIP(new URL(d.url).hostname.replace(/^\[|\]$/g, '')) ? await egressCheck(d.url, egress) : null;
  if (refused) return refused;
  const t = Math.floor(Date.now() / 1000);
  const headers = { 'x-vad-delivery': d.id, 'x-vad-event': d.event, 'x-vad-signature': signatureHeader(d.secret, t, d.body) };
  return postDelivery(d.url, headers, d.body, timeoutMs, egress);
}
