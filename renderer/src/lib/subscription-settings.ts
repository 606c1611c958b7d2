// Settings → Subscription page, the rules without the screen: the values as the form holds them,
// what the server would refuse (the same rules, in words), and the change to send.
import type { SubscriptionSettings, SubscriptionSettingsUpdate } from '../../../common/api-types.ts';

export type Field = 'support_url' | 'profile_web_page_url' | 'announce';
export type Values = Record<Field, string>;
export type Problems = Partial<Record<Field, string>>;

export const ANNOUNCE_MAX = 200;
const URL_MAX = 2048;
export const FIELDS: Field[] = ['support_url', 'profile_web_page_url', 'announce'];

export const valuesOf = (s: SubscriptionSettings): Values => ({ support_url: s.support_url ?? '', profile_web_page_url: s.profile_web_page_url ?? '', announce: s.announce ?? '' });

function urlProblem(v: string): string | undefined {
  if (!v) return undefined;
  if (v.length > URL_MAX) return `Up to ${URL_MAX} characters.`;
  try {
    const u = new URL(v);
    if (!/^https?:\/\//i.test(v) || /\s/.test(v) || !u.hostname) throw new Error();
  } catch {
    return 'Enter a web address starting with https:// or http://, e.g. https://t.me/your_support';
  }
  return undefined;
}

/** What the server would refuse, by field (the same rules, in words). */
export function settingsProblems(v: Values): Problems {
  const out: Problems = {};
  const support = urlProblem(v.support_url);
  if (support) out.support_url = support;
  const page = urlProblem(v.profile_web_page_url);
  if (page) out.profile_web_page_url = page;
  if ([...v.announce].length > ANNOUNCE_MAX) out.announce = `Up to ${ANNOUNCE_MAX} characters (now ${[...v.announce].length}).`;
  // Line breaks and tabs are text; other control characters are not.
  else if (/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(v.announce)) out.announce = 'Plain text only: line breaks are fine, other control characters are not.';
  return out;
}

/** The fields that changed, trimmed; an emptied field is null (cleared). */
export function changes(v: Values, saved: Values): SubscriptionSettingsUpdate {
  const body: SubscriptionSettingsUpdate = {};
  for (const f of FIELDS) {
    const now = v[f].trim();
    if (now !== saved[f]) body[f] = now === '' ? null : now;
  }
  return body;
}
