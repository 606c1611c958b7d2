// The subscription settings repository on both databases: empty until set, a patch changes only
// the fields it names (null clears one), any language survives, customers are apart, and the
// subscription service's operations carry it.
import assert from 'node:assert/strict';
import { subscriptionSettingsOps as ops } from '../../server/store/repos/subscription-settings.ts';
import { subscriptionOps } from '../../server/store/repos/subscriptions.ts';
import { tokenOps } from '../../server/store/repos/tokens.ts';
import { eachDialect } from '../helpers/dialects.ts';
import { ISO_MS_Z } from '../helpers/server.ts';

const EMPTY = { support_url: null, profile_web_page_url: null, announce: null, updated_at: null };

eachDialect('subscription settings: read, patch field by field, clear, per customer', async (db) => {
  const acme = (await db.run(tokenOps.ensureCustomer('acme'))).id;
  const globex = (await db.run(tokenOps.ensureCustomer('globex'))).id;
  assert.deepEqual(await db.run(ops.getSubscriptionSettings(acme)), EMPTY, 'nothing set: every field null');

  const first = await db.run(ops.patchSubscriptionSettings(acme, { support_url: 'https://t.me/help', announce: 'Привет 👋\nline two' }));
  assert.equal(first.support_url, 'https://t.me/help');
  assert.equal(first.profile_web_page_url, null);
  assert.equal(first.announce, 'Привет 👋\nline two', 'any language and line breaks come back as written');
  assert.match(first.updated_at!, ISO_MS_Z);
  assert.deepEqual(await db.run(ops.getSubscriptionSettings(acme)), first);

  // A patch names only what changes; the rest stays.
  const second = await db.run(ops.patchSubscriptionSettings(acme, { profile_web_page_url: 'http://example.com/about' }));
  assert.deepEqual({ ...second, updated_at: null }, { support_url: 'https://t.me/help', profile_web_page_url: 'http://example.com/about', announce: 'Привет 👋\nline two', updated_at: null });
  assert.ok(second.updated_at! >= first.updated_at!);

  // null clears; the row stays, with its time.
  const cleared = await db.run(ops.patchSubscriptionSettings(acme, { support_url: null, announce: null }));
  assert.deepEqual({ ...cleared, updated_at: null }, { ...EMPTY, profile_web_page_url: 'http://example.com/about' });
  assert.equal((await db.sql('SELECT customer_id FROM subscription_settings')).length, 1, 'one row per customer');

  // Another customer's settings are its own.
  assert.deepEqual(await db.run(ops.getSubscriptionSettings(globex)), EMPTY);
  await db.run(ops.patchSubscriptionSettings(globex, { announce: 'globex only' }));
  assert.equal((await db.run(ops.getSubscriptionSettings(acme))).announce, null);
  assert.equal((await db.run(ops.getSubscriptionSettings(globex))).announce, 'globex only');

  // The subscription service reaches them through its own operations.
  assert.equal(subscriptionOps.getSubscriptionSettings, ops.getSubscriptionSettings);
  assert.equal(subscriptionOps.patchSubscriptionSettings, ops.patchSubscriptionSettings);
});

eachDialect('subscription settings: concurrent patches of different fields are all kept', async (db) => {
  const acme = (await db.run(tokenOps.ensureCustomer('acme'))).id;
  await Promise.all([
    db.run(ops.patchSubscriptionSettings(acme, { support_url: 'https://a.example/help' })),
    db.run(ops.patchSubscriptionSettings(acme, { profile_web_page_url: 'https://a.example/' })),
    db.run(ops.patchSubscriptionSettings(acme, { announce: 'hello' })),
  ]);
  const s = await db.run(ops.getSubscriptionSettings(acme));
  assert.deepEqual([s.support_url, s.profile_web_page_url, s.announce], ['https://a.example/help', 'https://a.example/', 'hello']);
});
