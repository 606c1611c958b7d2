// What the owner adds to every subscription feed and page of a customer: a support link, a
// profile web page and a short announcement, one row per customer (made by the first change).
// Feeds carry them as the `support-url`, `profile-web-page-url` and `announce` headers
// (server/subscriptions/service.ts); the page shows the announcement and the support link.
import type { SubscriptionSettings } from '../../contract/subscriptions.ts';
import { isoNow } from '../../time.ts';
import { assignments, get, run, tx, type Op } from '../sql/op.ts';

export const SUBSCRIPTION_SETTINGS_FIELDS = ['support_url', 'profile_web_page_url', 'announce'] as const;
export type SubscriptionSettingsField = (typeof SUBSCRIPTION_SETTINGS_FIELDS)[number];

/** The settings as the API shows them (contract/subscriptions.ts); updated_at null: never set. */
export type SubscriptionSettingsRow = SubscriptionSettings;

/** Only the fields sent change; a null clears one. */
export type SubscriptionSettingsPatch = Partial<Record<SubscriptionSettingsField, string | null>>;

const COLUMNS = 'support_url, profile_web_page_url, announce, updated_at';

/** The customer's settings; every field null until the owner sets one. */
function* getSubscriptionSettings(customerId: string): Op<SubscriptionSettingsRow> {
  const row = yield* get<SubscriptionSettingsRow>(`SELECT ${COLUMNS} FROM subscription_settings WHERE customer_id = ?`, customerId);
  return row ?? { support_url: null, profile_web_page_url: null, announce: null, updated_at: null };
}

/**
 * Applies `patch`, creating the row on first use. Each statement sets only the columns sent, so
 * concurrent changes of different fields (from several instances) are all kept.
 */
const patchSubscriptionSettings = tx(function* (customerId: string, patch: SubscriptionSettingsPatch): Op<SubscriptionSettingsRow> {
  const now = isoNow();
  yield* run('INSERT INTO subscription_settings (customer_id, updated_at) VALUES (?, ?) ON CONFLICT (customer_id) DO NOTHING', customerId, now);
  const { sets, args } = assignments(patch, SUBSCRIPTION_SETTINGS_FIELDS);
  return (yield* get<SubscriptionSettingsRow>(
    `UPDATE subscription_settings SET ${[...sets, 'updated_at = ?'].join(', ')} WHERE customer_id = ? RETURNING ${COLUMNS}`,
    ...args,
    now,
    customerId,
  ))!;
});

export const subscriptionSettingsOps = { getSubscriptionSettings, patchSubscriptionSettings };
