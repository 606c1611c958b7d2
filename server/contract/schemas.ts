// Every shape of the v2 API, written once. These schemas validate requests, serialize
// responses, type the route handlers and the clients, and generate /v2/openapi.json.
// `x-extension: true` marks what the interface document does not name (see decisions.md).
import Type, { type Static, type TNull, type TOptional, type TSchema, type TUnion } from 'typebox';

const ext = { 'x-extension': true } as const;

export const MAX_SAFE = Number.MAX_SAFE_INTEGER; // 2^53 - 1
export const CLIENT_ID_PATTERN = '^[A-Za-z0-9._:@-]{1,128}$';
export const ZONE_CODE_PATTERN = '^[a-z0-9-]{2,32}$';

export const DateTime = Type.String({
  format: 'date-time',
  description: 'ISO 8601 UTC with milliseconds and Z, e.g. 2026-11-22T10:04:05.123Z',
});

export const SessionStatusValue = Type.Union(
  [Type.Literal('created'), Type.Literal('active'), Type.Literal('idle'), Type.Literal('ended')],
  { description: 'created: no connection yet; active: a connection is open; idle: a reusable session whose connections all closed; ended: terminal.' },
);

export const EventTypeValue = Type.Union([
  Type.Literal('session_start'),
  Type.Literal('session_heartbeat'),
  Type.Literal('session_end'),
  Type.Literal('session_stats'),
]);

export const ErrorRecord = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: 'Stable snake_case code.' }),
      message: Type.String(),
      details: Type.Object({}, { additionalProperties: true }),
    }),
  },
  { description: 'The body of every error response.' },
);

export const Zone = Type.Object({
  name: Type.String(),
  code: Type.String(),
  has_active_nodes: Type.Boolean(),
  country: Type.String({ ...ext, description: 'ISO 3166-1 alpha-2 country code, upper case.' }),
  cities: Type.Array(Type.String(), { ...ext, description: 'Cities served, lower case.' }),
});

export const ZoneList = Type.Object({ zones: Type.Array(Zone) });

export const SessionCreateRequest = Type.Object(
  {
    client_id: Type.String({ pattern: CLIENT_ID_PATTERN, description: '1 to 128 characters of A-Z a-z 0-9 . _ : @ -' }),
    connection_type: Type.Optional(Type.String({ description: 'Only `vless` is supported (default).' })),
    zone: Type.String({ description: 'Zone code.' }),
    reusable: Type.Optional(Type.Boolean({ description: 'Default false.' })),
    expires_at: Type.Optional({
      ...DateTime,
      ...ext,
      description:
        'Extension: when the session ends by itself (in the future, at most 10 years ahead). Its connections are cut then and it ends as over a cap. ' +
        'Absent: the session limits\' default_lifetime_seconds, if set; else never.',
    }),
  },
  { additionalProperties: false },
);

export const Configuration = Type.Object({
  protocol: Type.Literal('vless'),
  address: Type.String(),
  port: Type.Integer(),
  id: Type.String(),
  encryption: Type.Literal('none'),
  network: Type.Union([Type.Literal('ws'), Type.Literal('tcp')]),
  path: Type.Optional(Type.String()),
  security: Type.Union([Type.Literal('none'), Type.Literal('tls')]),
  sni: Type.Optional(Type.String()),
  fp: Type.Optional(Type.String({ ...ext, description: 'With TLS: the TLS client fingerprint to imitate (link `fp`), e.g. chrome.' })),
  alpn: Type.Optional(Type.String({ ...ext, description: 'With TLS: ALPN protocols, comma-separated (link `alpn`), e.g. http/1.1.' })),
  pcs: Type.Optional(
    Type.String({
      ...ext,
      pattern: '^[0-9a-f]{64}$',
      description: 'With a self-signed certificate: its SHA-256 over the DER, hex without colons (link `pcs`, Xray pinnedPeerCertSha256). Absent for a CA-signed certificate.',
    }),
  ),
  vcn: Type.Optional(Type.String({ ...ext, description: 'With TLS: the name to verify the certificate by, when it differs from sni (link `vcn`, Xray verifyPeerCertByName).' })),
});

export const Session = Type.Object({
  id: Type.String({ format: 'uuid' }),
  connection_type: Type.Literal('vless'),
  zone: Type.String(),
  configuration: Configuration,
  configuration_link: Type.String(),
  reusable: Type.Boolean(),
  created_at: DateTime,
  client_id: Type.String(ext),
  status: { ...SessionStatusValue, ...ext },
  paused: Type.Boolean(ext),
  duration: Type.Integer(ext),
  uploaded_bytes: Type.Integer(ext),
  downloaded_bytes: Type.Integer(ext),
  expires_at: Type.Optional({ ...DateTime, ...ext, description: 'Extension: when the session ends by itself; absent when it never does.' }),
  over_quota: Type.Optional(Type.Boolean({ ...ext, description: 'Extension: present (true) while a periodic byte cap of the session, its client or the customer is reached: connections are refused until it renews.' })),
  over_quota_until: Type.Optional({ ...DateTime, ...ext, description: 'Extension: when that periodic cap renews (absent for a rolling 30-day window).' }),
  node: Type.Optional(Type.String({ ...ext, description: 'Extension: the data-plane node the session is placed on (`vpn-access node add` name, cluster mode); absent when the serving process carries it itself (`local`).' })),
});

export const SessionList = Type.Object(
  {
    sessions: Type.Array(Session),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
  },
  ext,
);

export const SessionListQuery = Type.Object(
  {
    client_id: Type.Optional(Type.String()),
    status: Type.Optional(SessionStatusValue),
    zone: Type.Optional(Type.String()),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
    cursor: Type.Optional(Type.String({ maxLength: 64 })),
  },
  { additionalProperties: false },
);

export const SessionStatusResponse = Type.Object({
  client_id: Type.String(),
  status: SessionStatusValue,
  duration: Type.Integer({ description: 'Whole seconds with at least one open connection.' }),
  uploaded_bytes: Type.Integer(),
  downloaded_bytes: Type.Integer(),
  paused: Type.Boolean(ext),
  expires_at: Type.Optional({ ...DateTime, ...ext, description: 'Extension: when the session ends by itself; absent when it never does.' }),
  over_quota: Type.Optional(Type.Boolean({ ...ext, description: 'Extension: present (true) while a periodic byte cap of the session, its client or the customer is reached: connections are refused until it renews.' })),
  over_quota_until: Type.Optional({ ...DateTime, ...ext, description: 'Extension: when that periodic cap renews (absent for a rolling 30-day window).' }),
});

export const PauseResult = Type.Object({ session_id: Type.String(), paused: Type.Boolean() });

export const SessionIdParams = Type.Object({ id: Type.String({ maxLength: 200 }) });

export const SessionEvent = Type.Object({
  id: Type.Integer(),
  session_id: Type.String(),
  event_type: EventTypeValue,
  created_at: DateTime,
  duration: Type.Integer(),
  downloaded_bytes: Type.Integer(),
  uploaded_bytes: Type.Integer(),
});

const StringOrList = Type.Union([Type.String(), Type.Array(Type.String())]);
export const EventStreamQuery = Type.Object(
  {
    session_id: Type.Optional({ ...StringOrList, ...ext }),
    event_type: Type.Optional({ ...Type.Union([EventTypeValue, Type.Array(EventTypeValue)]), ...ext }),
    last_event_id: Type.Optional(Type.String({ ...ext, pattern: '^[0-9]{1,16}$' })),
    tail: Type.Optional(
      Type.Integer({
        ...ext,
        minimum: 0,
        maximum: 10_000,
        description: 'Without a Last-Event-ID: replay only the `tail` newest matching events (0: live only). Without either, every stored event is replayed.',
      }),
    ),
  },
  { additionalProperties: false },
);

// Limits: one value schema per field; `null` in an update removes the field.
const bytes = (description: string) => Type.Integer({ minimum: 0, maximum: MAX_SAFE, description });
const speed = (description: string) => Type.Integer({ minimum: 1, maximum: MAX_SAFE, description });
const trafficFields = {
  downloaded_bytes: bytes('Download limit in bytes (lifetime total, or per period with reset_period).'),
  uploaded_bytes: bytes('Upload limit in bytes (lifetime total, or per period with reset_period).'),
  reset_period: Type.Union([Type.Literal('none'), Type.Literal('day'), Type.Literal('week'), Type.Literal('month'), Type.Literal('rolling_30d')], {
    ...ext,
    description:
      'Extension: when the byte caps renew. none (default): they count the lifetime. day, week, month: they count from the start of the current period ' +
      '(counted from reset_anchor) and renew by themselves when it turns. rolling_30d: they count the last 30 days.',
  }),
  reset_anchor: Type.String({ format: 'date-time', ...ext, description: 'Extension: where day, week and month periods count from; default 2000-01-01T00:00:00Z (midnight UTC).' }),
  download_speed: speed('Download speed limit in bytes per second.'),
  upload_speed: speed('Upload speed limit in bytes per second.'),
};
/** The highest max_devices (a client's device rows stay bounded). */
export const MAX_DEVICES = 1000;
export const clientFields = {
  ...trafficFields,
  max_sessions: Type.Integer({ minimum: 0, maximum: MAX_SAFE, description: 'Sessions of one client with open connections at once.' }),
  max_reconnections: Type.Integer({ minimum: 0, maximum: MAX_SAFE, description: 'Connections after the first for one reusable session.' }),
  max_devices: Type.Integer({
    minimum: 0,
    maximum: MAX_DEVICES,
    ...ext,
    description:
      'Extension: the most devices (apps sending `x-hwid`) that may fetch one client\'s subscription feed; 0 or absent: no limit. ' +
      'Beyond it a new device gets no links (`x-hwid-max-devices-reached: true`), and an app sending no `x-hwid` gets none either ' +
      '(`x-hwid-not-supported: true`). Only the feed reads it: connections are not limited by it.',
  }),
};

type Optionals<F extends Record<string, TSchema>> = { [K in keyof F]: TOptional<F[K]> };
type Nullables<F extends Record<string, TSchema>> = { [K in keyof F]: TOptional<TUnion<[F[K], TNull]>> };

export function recordOf<F extends Record<string, TSchema>>(fields: F) {
  const props = {} as Record<string, TSchema>;
  for (const [k, v] of Object.entries(fields)) props[k] = Type.Optional(v);
  return Type.Object({ id: Type.String({ format: 'uuid' }), created_at: DateTime, updated_at: DateTime, ...(props as Optionals<F>) });
}
export function updateOf<F extends Record<string, TSchema>>(fields: F) {
  const props = {} as Record<string, TSchema>;
  for (const [k, v] of Object.entries(fields)) props[k] = Type.Optional(Type.Union([v, Type.Null()]));
  return Type.Object(props as Nullables<F>, { additionalProperties: false, minProperties: 1 });
}

const sessionFields = {
  ...trafficFields,
  default_lifetime_seconds: Type.Integer({
    minimum: 60,
    maximum: 10 * 365 * 86_400,
    ...ext,
    description: 'Extension: the lifetime of a new session that names no expires_at (seconds from its creation).',
  }),
};

export const LIMIT_FIELDS = {
  global: Object.keys(trafficFields),
  client: Object.keys(clientFields),
  session: Object.keys(sessionFields),
} as const;

export const GlobalLimits = recordOf(trafficFields);
export const ClientLimits = recordOf(clientFields);
export const SessionLimits = recordOf(sessionFields);
export const GlobalLimitsUpdate = updateOf(trafficFields);
export const ClientLimitsUpdate = updateOf(clientFields);
export const SessionLimitsUpdate = updateOf(sessionFields);

export const ServerInfo = Type.Object(
  {
    version: Type.String(),
    api_port: Type.Integer(),
    public_host: Type.String(),
    ws_path: Type.String(),
    vless_tcp_port: Type.Union([Type.Integer(), Type.Null()]),
    proxy_port: Type.Union([Type.Integer(), Type.Null()]),
    tls: Type.Boolean({ description: 'TLS on the API port, VLESS (ws and tcp) and the proxy.' }),
    tls_status: Type.Object(
      {
        mode: Type.Union([Type.Literal('auto'), Type.Literal('on'), Type.Literal('off')], { description: 'The --tls mode asked for.' }),
        enabled: Type.Boolean(),
        reason: Type.String({ description: 'Why TLS is on or off, in a sentence.' }),
        source: Type.Union([Type.Literal('files'), Type.Literal('acme'), Type.Literal('self-signed'), Type.Null()], {
          description: 'Where the certificate comes from: given files, ACME, or generated self-signed; null when TLS is off.',
        }),
        self_signed: Type.Union([Type.Boolean(), Type.Null()], { description: 'True when clients must pin the certificate (links carry pcs).' }),
        fingerprint_sha256: Type.Union([Type.String(), Type.Null()], { description: 'SHA-256 of the certificate DER, lower-case hex without colons.' }),
        not_after: Type.Union([DateTime, Type.Null()]),
        names: Type.Array(Type.String(), { description: 'DNS names and IP addresses the certificate covers.' }),
      },
      { ...ext, description: 'Which TLS mode is in force, why, and the certificate served.' },
    ),
    token: Type.Object(
      {
        customer: Type.String({ description: 'The name of the customer the calling token belongs to.' }),
        role: Type.Union([Type.Literal('owner'), Type.Literal('agent')]),
      },
      { ...ext, description: 'Whom the calling token signs in as (never the token itself).' },
    ),
  },
  ext,
);

export type ErrorRecord = Static<typeof ErrorRecord>;
export type Zone = Static<typeof Zone>;
export type ZoneList = Static<typeof ZoneList>;
export type SessionCreateRequest = Static<typeof SessionCreateRequest>;
export type Configuration = Static<typeof Configuration>;
export type Session = Static<typeof Session>;
export type SessionList = Static<typeof SessionList>;
export type SessionListQuery = Static<typeof SessionListQuery>;
export type SessionStatusResponse = Static<typeof SessionStatusResponse>;
export type SessionStatusValue = Static<typeof SessionStatusValue>;
export type PauseResult = Static<typeof PauseResult>;
export type SessionEvent = Static<typeof SessionEvent>;
export type EventType = Static<typeof EventTypeValue>;
export type EventStreamQuery = Static<typeof EventStreamQuery>;
export type ClientLimits = Static<typeof ClientLimits>;
export type ClientLimitsUpdate = Static<typeof ClientLimitsUpdate>;
export type GlobalLimits = Static<typeof GlobalLimits>;
export type SessionLimits = Static<typeof SessionLimits>;
export type LimitsRecord = ClientLimits;
export type LimitsUpdate = ClientLimitsUpdate;
export type LimitScope = keyof typeof LIMIT_FIELDS;
export type ServerInfo = Static<typeof ServerInfo>;
