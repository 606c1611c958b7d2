// What the audit trail shows, and to whom. Agents may do what agents may do (sessions and
// subscriptions: decisions.md, "Authentication and tenancy") and see only those actions; limits,
// tokens and webhooks are owner business, and so is any action added later unless listed here.
// Webhook URLs often carry the credential itself (a chat's incoming-hook path, `?token=`): the
// trail keeps only their scheme, host and port, masked when written and again when read (rows
// written before masking existed are shown masked too).
import type { AuditEntry } from '../store/store.ts';

/** The actions an agent token sees at GET /v2/audit. */
export const AGENT_VISIBLE_ACTIONS: readonly string[] = [
  'session.create',
  'session.pause',
  'session.resume',
  'subscription.enable',
  'subscription.rotate',
  'subscription.disable',
];

export const URL_MASK = '***';

/** `scheme://host[:port]/***`: the path, query and fragment replaced; idempotent. */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}/${URL_MASK}`;
  } catch {
    return URL_MASK;
  }
}

/** A before/after value with every `url` field masked (other values as they are). */
export function maskUrls<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  if (typeof out.url === 'string') out.url = maskUrl(out.url);
  return out as T;
}

/** An entry as the API shows it. */
export function shownEntry(e: AuditEntry): AuditEntry {
  return { ...e, before: maskUrls(e.before), after: maskUrls(e.after) };
}
