// Schemas of the webhook extension: /v2/webhooks (owner tokens only). Every schema here is an
// extension of the contract (`x-extension: true`); documented clients never see these routes.
import Type, { type Static } from 'typebox';
import { DateTime } from './schemas.ts';

const ext = { 'x-extension': true } as const;

/** Every event kind an endpoint may subscribe to. The first four are the session events of the stream. */
export const WEBHOOK_EVENT_KINDS = [
  'session_start',
  'session_stats',
  'session_heartbeat',
  'session_end',
  'session_paused',
  'session_resumed',
  'cap_reached',
  'usage_threshold',
  'expired',
  'limits_changed',
  'client_changed',
  'webhook_disabled',
] as const;
export type WebhookEventKind = (typeof WEBHOOK_EVENT_KINDS)[number];

export const WebhookEventKindValue = Type.Union(
  [
    Type.Literal('session_start'),
    Type.Literal('session_stats'),
    Type.Literal('session_heartbeat'),
    Type.Literal('session_end'),
    Type.Literal('session_paused'),
    Type.Literal('session_resumed'),
    Type.Literal('cap_reached'),
    Type.Literal('usage_threshold'),
    Type.Literal('expired'),
    Type.Literal('limits_changed'),
    Type.Literal('client_changed'),
    Type.Literal('webhook_disabled'),
  ],
  {
    description:
      'session_start, session_stats, session_heartbeat, session_end (the stream\'s events), session_paused, session_resumed, cap_reached, ' +
      'usage_threshold (50, 80 and 100 % of a session, client or global byte cap in force reached, download and upload apart, once per threshold and period), expired, limits_changed (a client override too: scope client with its client_id), ' +
      'client_changed (a client disabled or enabled, its expiry set, its usage reset), webhook_disabled (another endpoint of the customer was disabled by the server after failing).',
  },
);

const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'http:// or https:// URL the deliveries are POSTed to.' });
const Events = Type.Array(WebhookEventKindValue, { minItems: 1, maxItems: WEBHOOK_EVENT_KINDS.length, uniqueItems: true });
const Secret = Type.String({ minLength: 16, maxLength: 256, description: 'Signing secret (16 to 256 characters); generated when absent.' });

export const WebhookCreate = Type.Object(
  { url: Url, events: Events, secret: Type.Optional(Secret), enabled: Type.Optional(Type.Boolean()) },
  { additionalProperties: false, ...ext },
);
export const WebhookUpdate = Type.Object(
  { url: Type.Optional(Url), events: Type.Optional(Events), enabled: Type.Optional(Type.Boolean()) },
  { additionalProperties: false, minProperties: 1, ...ext },
);
export const WebhookParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

export const Webhook = Type.Object(
  {
    id: Type.String(),
    url: Type.String(),
    events: Type.Array(WebhookEventKindValue),
    enabled: Type.Boolean(),
    secret_prefix: Type.String({ description: 'The first characters of the secret, to tell secrets apart; the secret itself is shown once.' }),
    created_at: DateTime,
    updated_at: DateTime,
    consecutive_failures: Type.Integer({ description: 'Delivery attempts failed in a row (0 after a success).' }),
    failing_since: Type.Union([DateTime, Type.Null()], { description: 'When the current run of failures began; null while deliveries succeed.' }),
    disabled_reason: Type.Union([Type.String(), Type.Null()], {
      description: 'Why the server disabled the endpoint (too many failed attempts in a row, or failing for too long); null unless it did. Enabling it again clears it.',
    }),
    disabled_at: Type.Union([DateTime, Type.Null()]),
    dropped: Type.Integer({ description: 'Pending deliveries dropped, oldest first, because too many were waiting for this endpoint.' }),
    last_error: Type.Union([Type.String(), Type.Null()], { description: 'The error of the last failed delivery attempt (kept after a success); null if none failed.' }),
    last_error_at: Type.Union([DateTime, Type.Null()], { description: 'When the last failed attempt failed.' }),
    next_retry_at: Type.Union([DateTime, Type.Null()], {
      description: 'When the next retry of a failed delivery is due (it may lie in the past while the sender catches up); null when none waits.',
    }),
  },
  ext,
);
/** The answer of POST /webhooks: the endpoint with its secret, shown this once. */
export const WebhookCreated = Type.Object(
  { ...Webhook.properties, secret: Type.String({ description: 'The signing secret: shown only in this answer.' }) },
  ext,
);
export const WebhookList = Type.Object({ webhooks: Type.Array(Webhook) }, ext);

export const WebhookDelivery = Type.Object(
  {
    id: Type.String({ description: 'The delivery id (X-VAD-Delivery): the same on every attempt.' }),
    event: WebhookEventKindValue,
    status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
    attempts: Type.Integer(),
    response_status: Type.Union([Type.Integer(), Type.Null()], { description: 'HTTP status of the last answer, null when none came.' }),
    error: Type.Union([Type.String(), Type.Null()]),
    next_attempt_at: Type.Union([DateTime, Type.Null()]),
    created_at: DateTime,
    delivered_at: Type.Union([DateTime, Type.Null()]),
  },
  ext,
);
export const WebhookDeliveryList = Type.Object({ deliveries: Type.Array(WebhookDelivery) }, ext);
export const WebhookDeliveryQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })) }, { additionalProperties: false });

/** The answer of POST /webhooks/{id}/test: one signed `test` delivery sent at once. */
export const WebhookTestResult = Type.Object(
  {
    delivered: Type.Boolean({ description: 'The endpoint answered 2xx.' }),
    status_code: Type.Union([Type.Integer(), Type.Null()], { description: 'The HTTP status of the answer, null when none came.' }),
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why it failed (never an address); null when delivered.' }),
    duration_ms: Type.Integer({ minimum: 0, description: 'From sending to the answer (or the failure), in milliseconds.' }),
  },
  ext,
);

export type WebhookCreate = Static<typeof WebhookCreate>;
export type WebhookUpdate = Static<typeof WebhookUpdate>;
export type Webhook = Static<typeof Webhook>;
export type WebhookDelivery = Static<typeof WebhookDelivery>;
export type WebhookTestResult = Static<typeof WebhookTestResult>;
