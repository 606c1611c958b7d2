// The owner's subscription settings (support link, profile web page, announcement): the rules a
// change must meet beyond its schema, and the headers every feed carries for them, as Hiddify,
// v2rayNG and Happ read them.
import { ApiError } from '../contract/errors.ts';
import type { SubscriptionSettingsPatch, SubscriptionSettingsRow } from '../store/repos/subscription-settings.ts';

const URL_FIELDS = ['support_url', 'profile_web_page_url'] as const;
// Line breaks and tabs are text; every other control character is refused.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const URL_UNSAFE = /[\s\u0000-\u001f\u007f-\u009f]/;

/** Whether `v` is an absolute http(s) URL with a host, written out in full (no spaces or control characters). */
export function isWebUrl(v: string): boolean {
  if (!/^https?:\/\//i.test(v) || URL_UNSAFE.test(v)) return false;
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

/** Throws invalid_request (the fields and their problems in details) unless the patch's values are acceptable. */
export function checkSettingsPatch(patch: SubscriptionSettingsPatch): void {
  const fields: { field: string; problem: string }[] = [];
  for (const f of URL_FIELDS) {
    const v = patch[f];
    if (typeof v === 'string' && !isWebUrl(v)) fields.push({ field: f, problem: 'must be an http:// or https:// URL' });
  }
  if (typeof patch.announce === 'string' && CONTROL.test(patch.announce)) fields.push({ field: 'announce', problem: 'must be plain text (line breaks allowed, no other control characters)' });
  if (!fields.length) return;
  throw new ApiError('invalid_request', `Invalid request: ${fields.map((p) => `${p.field} ${p.problem}`).join('; ')}.`, { location: 'body', fields });
}

/** A URL as a header carries it: ASCII only (a non-ASCII host or path in its encoded form). */
function headerUrl(v: string): string {
  return /^[\x21-\x7e]+$/.test(v) ? v : new URL(v).href;
}

/** The headers of the settings that are set: `announce` as `base64:` and its UTF-8 in base64, safe in any language. */
export function settingsHeaders(s: SubscriptionSettingsRow): Record<string, string> {
  const out: Record<string, string> = {};
  if (s.support_url) out['support-url'] = headerUrl(s.support_url);
  if (s.profile_web_page_url) out['profile-web-page-url'] = headerUrl(s.profile_web_page_url);
  if (s.announce) out.announce = `base64:${Buffer.from(s.announce, 'utf8').toString('base64')}`;
  return out;
}
