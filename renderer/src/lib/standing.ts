// Where a session or a client stands, in words: the badges of a list row (over quota until,
// paused, expires soon, expired, disabled, ended), why a link can carry no traffic now (and
// whether that can change), and the usage against the byte cap in force. Pure: the caller
// gives `now`, and test/unit/standing.test.ts pins them.
import type { Client } from '../../../common/client-types.ts';
import { formatBytes, formatDateTime, formatShortDateTime } from './format.ts';
import { spanWords } from './when.ts';

export type Tone = 'ok' | 'warn' | 'danger' | 'muted';
export interface Badge {
  key: 'status' | 'over-quota' | 'paused' | 'expires-soon' | 'expired' | 'disabled' | 'ended' | 'client-expired';
  text: string;
  tone: Tone;
}

/** What of a session the badges read (a Session, a SessionView, a status answer). */
export interface SessionLike {
  client_id: string;
  status: string;
  paused: boolean;
  expires_at?: string;
  over_quota?: boolean;
  over_quota_until?: string;
}

const DAY = 86_400_000;
const passed = (iso: string | null | undefined, now: number) => !!iso && Date.parse(iso) <= now;
const within = (iso: string | null | undefined, now: number, ms: number) => !!iso && Date.parse(iso) > now && Date.parse(iso) - now < ms;

function overQuotaText(until: string | undefined): string {
  return until ? `over quota until ${formatShortDateTime(until)}` : 'over quota (rolling 30 days)';
}

/** The badges of a session row: its status, then every reason it carries no traffic, then warnings. */
export function sessionBadges(s: SessionLike, client: Client | undefined, now: number): Badge[] {
  const out: Badge[] = [];
  if (s.status === 'ended') out.push(passed(s.expires_at, now) ? { key: 'expired', text: 'expired', tone: 'danger' } : { key: 'ended', text: 'ended', tone: 'danger' });
  else out.push({ key: 'status', text: s.status, tone: s.status === 'active' ? 'ok' : 'muted' });
  if (s.status === 'ended') return out;
  if (client?.disabled) out.push({ key: 'disabled', text: 'client disabled', tone: 'danger' });
  else if (client?.status === 'expired') out.push({ key: 'client-expired', text: 'client expired', tone: 'danger' });
  if (s.over_quota || client?.status === 'over_quota') out.push({ key: 'over-quota', text: overQuotaText(s.over_quota_until ?? client?.over_quota_until), tone: 'danger' });
  if (s.paused) out.push({ key: 'paused', text: 'paused', tone: 'warn' });
  if (within(s.expires_at, now, DAY)) out.push({ key: 'expires-soon', text: `expires in ${spanWords(Date.parse(s.expires_at!) - now)}`, tone: 'warn' });
  else if (!client?.disabled && within(client?.expires_at, now, DAY)) out.push({ key: 'expires-soon', text: `client expires in ${spanWords(Date.parse(client!.expires_at!) - now)}`, tone: 'warn' });
  return out;
}

/** The badges of a client row: its status in words, and a warning when it expires within a day. */
export function clientBadges(c: Client, now: number): Badge[] {
  const out: Badge[] = [];
  if (c.disabled || c.status === 'disabled') out.push({ key: 'disabled', text: 'disabled', tone: 'danger' });
  else if (c.status === 'expired') out.push({ key: 'expired', text: `expired${c.expires_at ? ` ${formatShortDateTime(c.expires_at)}` : ''}`, tone: 'danger' });
  else if (c.status === 'over_quota') out.push({ key: 'over-quota', text: overQuotaText(c.over_quota_until), tone: 'danger' });
  else if (c.status === 'paused') out.push({ key: 'paused', text: 'paused', tone: 'warn' });
  else out.push({ key: 'status', text: c.status, tone: c.status === 'active' ? 'ok' : 'muted' });
  if (!c.disabled && c.status !== 'expired' && within(c.expires_at, now, DAY)) out.push({ key: 'expires-soon', text: `expires in ${spanWords(Date.parse(c.expires_at!) - now)}`, tone: 'warn' });
  return out;
}

/**
 * Why a session's link (or QR code) can carry no traffic now, or null when it can. `final`:
 * it never will again (ended, expired), so copying it is refused; otherwise it works again
 * once the reason is lifted (resume, the cap renews, the client is enabled or its expiry moved),
 * so it may still be copied, with the reason beside it.
 */
export function linkBlock(s: SessionLike, client: Client | undefined, now: number): { reason: string; final: boolean } | null {
  if (s.status === 'ended')
    return passed(s.expires_at, now)
      ? { reason: `This session expired ${formatDateTime(s.expires_at!)}: its link will never connect again. Create a new session instead.`, final: true }
      : { reason: 'This session has ended: its link will never connect again. Create a new session instead.', final: true };
  if (client?.disabled) return { reason: `The client ${s.client_id} is disabled: this link is refused until the client is enabled again.`, final: false };
  if (client?.status === 'expired')
    return { reason: `The client ${s.client_id} expired${client.expires_at ? ` ${formatDateTime(client.expires_at)}` : ''}: this link is refused until its expiry is moved or cleared.`, final: false };
  if (s.over_quota || client?.status === 'over_quota') {
    const until = s.over_quota_until ?? client?.over_quota_until;
    return { reason: `Over quota${until ? ` until ${formatDateTime(until)}` : ' (rolling 30 days)'}: this link is refused until the byte cap renews.`, final: false };
  }
  if (s.paused) return { reason: 'This session is paused: its link is refused until it is resumed.', final: false };
  return null;
}

export interface Usage {
  used: number;
  cap: number;
  /** used / cap, 0 to 1 (capped). */
  fraction: number;
  direction: 'download' | 'upload';
  /** "1.2 GB of 2 GB downloaded this period". */
  words: string;
}

/**
 * A client's usage against the byte cap in force: of its download and upload caps the one
 * nearest to being reached, counted over the current period when the cap renews. Null without a cap.
 */
export function clientUsage(c: Client): Usage | null {
  const counts = c.period ?? c;
  let best: Usage | null = null;
  for (const direction of ['download', 'upload'] as const) {
    const cap = c.limits[direction === 'download' ? 'downloaded_bytes' : 'uploaded_bytes'] as number | undefined;
    if (cap === undefined || cap === null) continue;
    const used = direction === 'download' ? counts.downloaded_bytes : counts.uploaded_bytes;
    const fraction = cap <= 0 ? 1 : Math.min(1, used / cap);
    if (best && best.fraction >= fraction) continue;
    const span = c.period ? ' this period' : '';
    best = { used, cap, fraction, direction, words: `${formatBytes(used)} of ${formatBytes(cap)} ${direction === 'download' ? 'downloaded' : 'uploaded'}${span}` };
  }
  return best;
}

/** "connected now", "seen 5 minutes ago", "never seen". */
export function lastSeenWords(lastSeen: string | null | undefined, active: boolean, now: number): string {
  if (active) return 'connected now';
  if (!lastSeen) return 'never seen';
  const ms = now - Date.parse(lastSeen);
  if (!Number.isFinite(ms)) return lastSeen;
  return ms < 5000 ? 'seen just now' : `seen ${spanWords(ms)} ago`;
}
