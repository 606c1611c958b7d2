// Schemas of the clients extension: /v2/clients, one record per client_id of a customer (its
// sessions' totals, status, the limits in force and where each comes from, disabled, expiry),
// and a per-client override of the client limits template built from the same fields
// (`clientFields`), so a field added to the template is a field of the override too.
// Everything here is an extension (`x-extension: true`).
import Type, { type Static, type TSchema } from 'typebox';
import { MAX_LISTED_CLIENTS } from './client-names.ts';
import { CLIENT_ID_PATTERN, DateTime, clientFields, recordOf, updateOf } from './schemas.ts';

const ext = { 'x-extension': true } as const;

export type { ClientStatus } from './client-names.ts';

export const ClientStatusValue = Type.Union(
  [Type.Literal('active'), Type.Literal('idle'), Type.Literal('over_quota'), Type.Literal('paused'), Type.Literal('expired'), Type.Literal('disabled')],
  {
    description:
      'The first that holds: disabled (the owner disabled it); expired (its expires_at passed); over_quota (a byte cap in force is reached); ' +
      'paused (every session not ended is paused); active (a connection is open now); idle (none of these).',
  },
);

const optionalFields = <F extends Record<string, TSchema>>(fields: F, value: (k: string, v: TSchema) => TSchema) => {
  const props: Record<string, TSchema> = {};
  for (const [k, v] of Object.entries(fields)) props[k] = Type.Optional(value(k, v));
  return props;
};

const Source = Type.Union([Type.Literal('override'), Type.Literal('template')]);

export const Client = Type.Object(
  {
    client_id: Type.String(),
    status: ClientStatusValue,
    sessions: Type.Integer({ description: 'Sessions of the client not ended.' }),
    uploaded_bytes: Type.Integer({ description: 'Lifetime total of all its sessions.' }),
    downloaded_bytes: Type.Integer({ description: 'Lifetime total of all its sessions.' }),
    period: Type.Union(
      [
        Type.Object({
          start: DateTime,
          end: Type.Union([DateTime, Type.Null()], { description: 'When the period renews; null for a rolling 30-day window.' }),
          uploaded_bytes: Type.Integer(),
          downloaded_bytes: Type.Integer(),
        }),
        Type.Null(),
      ],
      { description: 'The usage counted against the byte caps in force in their current period (after any usage reset); null when the caps in force have no reset_period.' },
    ),
    limits: Type.Object(optionalFields(clientFields, (_k, v) => v), { description: 'The client limit fields in force: the override\'s where set, else the template\'s.' }),
    limit_sources: Type.Object(optionalFields(clientFields, () => Source), { description: 'For each field in limits: whether the override or the template sets it.' }),
    over_quota_until: Type.Optional({ ...DateTime, description: 'While over quota and the caps renew: when they do.' }),
    disabled: Type.Boolean(),
    expires_at: Type.Union([DateTime, Type.Null()], { description: 'When the client\'s access ends (all its sessions), or null.' }),
    last_seen: Type.Union([DateTime, Type.Null()], { description: 'The last time the client had traffic or connected: now while a connection is open, else the end of its last bucket of traffic in the usage history; null when none.' }),
  },
  ext,
);

export const ClientList = Type.Object({ clients: Type.Array(Client) }, ext);

const ClientIdValue = Type.String({ pattern: CLIENT_ID_PATTERN, description: '1 to 128 characters of A-Z a-z 0-9 . _ : @ -' });

export const ClientListQuery = Type.Object(
  {
    status: Type.Optional(ClientStatusValue),
    client_id: Type.Optional(
      Type.Union([ClientIdValue, Type.Array(ClientIdValue, { minItems: 1, maxItems: MAX_LISTED_CLIENTS })], {
        description: `Only these clients (repeat the parameter, at most ${MAX_LISTED_CLIENTS}); a client_id with neither sessions nor a record is left out.`,
      }),
    ),
  },
  { additionalProperties: false },
);

export const ClientParams = Type.Object({ client_id: ClientIdValue });

export const ClientUpdate = Type.Object(
  {
    disabled: Type.Optional(Type.Boolean({ description: 'true cuts every open connection of every session of the client at once and refuses new ones.' })),
    expires_at: Type.Optional(
      Type.Union([DateTime, Type.Null()], { description: 'When the client\'s access ends (in the future; null: never). Its connections are cut then and new ones refused.' }),
    ),
  },
  { additionalProperties: false, minProperties: 1, ...ext },
);

/** The per-client override: the client limits record's fields, merged like it. */
export const ClientLimitsOverride = { ...recordOf(clientFields), ...ext };
export const ClientLimitsOverrideUpdate = { ...updateOf(clientFields), ...ext };

export type Client = Static<typeof Client>;
export type ClientList = Static<typeof ClientList>;
export type ClientListQuery = Static<typeof ClientListQuery>;
export type ClientUpdate = Static<typeof ClientUpdate>;
export type ClientLimitsOverride = Static<typeof ClientLimitsOverride>;
