// Schemas of the usage history extension: GET /v2/usage, traffic in time buckets per
// customer, client, session, zone or node (owner and agent tokens; a customer sees only its
// own). Everything here is an extension (`x-extension: true`).
import Type, { type Static } from 'typebox';
import { CLIENT_ID_PATTERN, DateTime, ZONE_CODE_PATTERN } from './schemas.ts';

const ext = { 'x-extension': true } as const;

/** The most buckets one answer holds (a wider range needs a coarser step). */
export const MAX_USAGE_BUCKETS = 400;
/** How many clients `top_clients` lists. */
export const TOP_CLIENTS = 10;

export const UsageStepValue = Type.Union([Type.Literal('minute'), Type.Literal('hour'), Type.Literal('day')], {
  description: 'Bucket size. Minute buckets are kept for a day, hour buckets for 90 days, day buckets for two years.',
});

export const UsageQuery = Type.Object(
  {
    client_id: Type.Optional(Type.String({ pattern: CLIENT_ID_PATTERN, description: 'Only this client\'s sessions.' })),
    session_id: Type.Optional(Type.String({ maxLength: 200, description: 'Only this session (404 when it is not one of the customer\'s).' })),
    zone: Type.Optional(Type.String({ pattern: ZONE_CODE_PATTERN, description: 'Only traffic of sessions in this zone.' })),
    node: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$', description: 'Only traffic carried by this node (`local`: the server itself).' })),
    from: Type.Optional(DateTime),
    to: Type.Optional(DateTime),
    step: Type.Optional(UsageStepValue),
  },
  {
    additionalProperties: false,
    description:
      'from defaults to 24 hours before to; to defaults to now. Without step the finest one is chosen that is kept for the whole range and gives at most 400 buckets.',
  },
);

const Bytes = {
  uploaded_bytes: Type.Integer({ minimum: 0, description: 'Bytes from the client to the destination.' }),
  downloaded_bytes: Type.Integer({ minimum: 0, description: 'Bytes from the destination to the client.' }),
};

export const UsageBucket = Type.Object({ start: DateTime, ...Bytes });

export const UsageReport = Type.Object(
  {
    from: { ...DateTime, description: 'Start of the first bucket (the asked `from` rounded down to the step).' },
    to: { ...DateTime, description: 'End of the last bucket (the asked `to` rounded up to the step).' },
    step: UsageStepValue,
    buckets: Type.Array(UsageBucket, { description: 'Every bucket of the range, oldest first; those without traffic carry zeros.' }),
    totals: Type.Object(Bytes, { description: 'The sums over the buckets.' }),
    top_clients: Type.Optional(
      Type.Array(Type.Object({ client_id: Type.String(), ...Bytes }), {
        description: 'Without a client_id or session_id filter: the clients that moved the most bytes in the range (both directions), at most 10.',
      }),
    ),
  },
  { ...ext, description: 'Traffic in time buckets.' },
);

export type UsageQuery = Static<typeof UsageQuery>;
export type UsageReport = Static<typeof UsageReport>;
export type UsageStepValue = Static<typeof UsageStepValue>;
