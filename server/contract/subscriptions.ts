// Schemas of the subscription extension: /v2/subscriptions/{client_id} (owner and agent tokens)
// and the public GET /sub/{secret}. Everything here is an extension (`x-extension: true`).
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

export type Subscription = Static<typeof Subscription>;
export type SubscriptionParams = Static<typeof SubscriptionParams>;
export type SubscriptionFeedQuery = Static<typeof SubscriptionFeedQuery>;
