// Schemas of the subscription extension: /v2/subscriptions/{client_id} (owner and agent tokens)
// and the public GET /sub/{secret}, and /v2/subscription-settings (what every feed of the
// customer carries besides the sessions). Everything here is an extension (`x-extension: true`).
import Type, { type Static } from 'typebox';
import { CLIENT_ID_PATTERN, DateTime } from './schemas.ts';

const ext = { 'x-extension': true } as const;

export const SUBSCRIPTION_FORMATS = ['base64', 'xray', 'sing-box', 'clash'] as const;
export type SubscriptionFormat = (typeof SUBSCRIPTION_FORMATS)[number];

const FORMAT_DESCRIPTION =
  'base64: share links, one a line, base64-encoded; xray: a full Xray/v2ray client config (JSON); sing-box: a sing-box config (JSON); clash: a Clash Meta (Mihomo) config (YAML).';

export const SubscriptionFormatValue = Type.Union(
  SUBSCRIPTION_FORMATS.map((f) => Type.Literal(f)),
  { description: FORMAT_DESCRIPTION },
);

export const SubscriptionParams = Type.Object({
  client_id: Type.String({ pattern: CLIENT_ID_PATTERN, description: '1 to 128 characters of A-Z a-z 0-9 . _ : @ -' }),
});

export const Subscription = Type.Object(
  {
    client_id: Type.String(),
    url: Type.String({ description: 'The subscription URL (no Authorization needed). The format follows the User-Agent of the client, or ?format=.' }),
    format_urls: Type.Object(
      Object.fromEntries(SUBSCRIPTION_FORMATS.map((f) => [f, Type.String()])) as Record<SubscriptionFormat, ReturnType<typeof Type.String>>,
      { description: 'The URL with each ?format= spelled out, for clients that do not send a known User-Agent.' },
    ),
    created_at: DateTime,
    rotated_at: Type.Union([DateTime, Type.Null()], { description: 'When the URL last changed (PUT on a subscription that was on); null if never.' }),
  },
  { ...ext, description: 'A client subscription. The secret in the URL reads only this client\'s subscription.' },
);

export const SubscriptionFeedParams = Type.Object({ secret: Type.String({ description: 'The secret of the URL; anything unknown is 404.' }) });

/** Other spellings the feed accepts for a format (the sing-box docs and apps write both). */
export const SUBSCRIPTION_FORMAT_ALIASES = { singbox: 'sing-box' } as const satisfies Record<string, SubscriptionFormat>;

export const SubscriptionFeedQuery = Type.Object(
  {
    format: Type.Optional(
      Type.Union(
        [...SUBSCRIPTION_FORMATS, ...Object.keys(SUBSCRIPTION_FORMAT_ALIASES)].map((f) => Type.Literal(f)),
        { description: `${FORMAT_DESCRIPTION} \`singbox\` is read as \`sing-box\`.` },
      ),
    ),
  },
  { additionalProperties: true },
);

/** The longest support or profile page URL, and the longest announcement (characters). */
export const SETTINGS_URL_MAX = 2048;
export const ANNOUNCE_MAX = 200;

const URL_RULE = `An http:// or https:// URL, up to ${SETTINGS_URL_MAX} characters.`;
const settingsFields = {
  support_url: Type.String({ minLength: 1, maxLength: SETTINGS_URL_MAX, description: `Where the client's people get help: the \`support-url\` header of every feed and the page's "Get help" link. ${URL_RULE}` }),
  profile_web_page_url: Type.String({ minLength: 1, maxLength: SETTINGS_URL_MAX, description: `A web page about the service: the \`profile-web-page-url\` header of every feed. ${URL_RULE}` }),
  announce: Type.String({
    minLength: 1,
    maxLength: ANNOUNCE_MAX,
    description: `Plain text, up to ${ANNOUNCE_MAX} characters, in any language (line breaks allowed, no other control characters): the \`announce\` header of every feed (as \`base64:\` and the UTF-8 text in base64) and the top of the page.`,
  }),
};

export const SubscriptionSettings = Type.Object(
  {
    support_url: Type.Union([settingsFields.support_url, Type.Null()]),
    profile_web_page_url: Type.Union([settingsFields.profile_web_page_url, Type.Null()]),
    announce: Type.Union([settingsFields.announce, Type.Null()]),
    updated_at: Type.Union([DateTime, Type.Null()], { description: 'When the owner last changed them; null: never.' }),
  },
  { ...ext, description: 'What every subscription feed and page of the customer carries besides the sessions; null: not set.' },
);

export const SubscriptionSettingsUpdate = Type.Object(
  {
    support_url: Type.Optional(Type.Union([settingsFields.support_url, Type.Null()])),
    profile_web_page_url: Type.Optional(Type.Union([settingsFields.profile_web_page_url, Type.Null()])),
    announce: Type.Optional(Type.Union([settingsFields.announce, Type.Null()])),
  },
  { ...ext, additionalProperties: false, minProperties: 1, description: 'Only the fields sent change; null clears one.' },
);

export type Subscription = Static<typeof Subscription>;
export type SubscriptionParams = Static<typeof SubscriptionParams>;
export type SubscriptionFeedQuery = Static<typeof SubscriptionFeedQuery>;
export type SubscriptionSettings = Static<typeof SubscriptionSettings>;
export type SubscriptionSettingsUpdate = Static<typeof SubscriptionSettingsUpdate>;
