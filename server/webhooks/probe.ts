// "Send test": one signed `test` delivery POSTed to an endpoint at once, the answer waited for
// with the usual timeout. It goes out as every delivery does (send.ts: the same signature,
// headers and egress policy) but outside the outbox: it is not stored, not retried, and not
// counted in the endpoint's health (a test neither disables an endpoint nor clears its failures).
// It is sent whether the endpoint is on or off: the owner tests a receiver before enabling it.
import { randomUUID } from 'node:crypto';
import type { WebhookTestResult } from '../contract/webhooks.ts';
import type { EgressPolicy } from '../dataplane/egress.ts';
import type { Logger } from '../domain.ts';
import type { WebhookRow } from '../store/repos/webhooks.ts';
import { isoNow } from '../time.ts';
import type { SecretBox } from './secret.ts';
import { sendSigned } from './send.ts';
import { envelope } from './views.ts';

/** The kind a test delivery carries (X-VAD-Event and the body's `type`). */
export const TEST_EVENT = 'test';

export interface ProbeOptions {
  timeoutMs: number;
  egress: EgressPolicy;
  log: Logger;
}

export async function sendTest(row: WebhookRow, box: SecretBox, o: ProbeOptions): Promise<WebhookTestResult> {
  let secret: string;
  try {
    secret = box.open(row.secret_enc);
  } catch {
    return { delivered: false, status_code: null, error: 'the signing secret cannot be decrypted with this server\'s webhook key', duration_ms: 0 };
  }
  const id = randomUUID();
  const data = { webhook_id: row.id, message: 'A test delivery sent from VPN Access Desk: nothing happened.' };
  const body = envelope(id, TEST_EVENT, isoNow(), data);
  const started = performance.now();
  const r = await sendSigned({ url: row.url, secret, id, event: TEST_EVENT, body }, o.timeoutMs, o.egress);
  const duration_ms = Math.max(0, Math.round(performance.now() - started));
  // What the owner reads names no address; the full story is for the server log.
  if (!r.ok) o.log.info({ webhook: row.id.slice(0, 8), error: r.error, detail: r.detail }, 'webhook test delivery failed');
  return { delivered: r.ok, status_code: r.statusCode, error: r.ok ? null : (r.error ?? 'failed'), duration_ms };
}
