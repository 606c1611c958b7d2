// Schemas of the audit trail extension: GET /v2/audit, who changed what and when.
// Everything here is an extension (`x-extension: true`).
import Type, { type Static } from 'typebox';
import { CLIENT_ID_PATTERN, DateTime } from './schemas.ts';

const ext = { 'x-extension': true } as const;

/** The actions recorded; `action` filters by exactly one of them. */
export const AUDIT_ACTIONS = [
  'session.create',
  'session.pause',
  'session.resume',
  'limits.update',
  'limits.delete',
  'token.create',
  'token.revoke',
  'subscription.enable',
  'subscription.rotate',
  'subscription.disable',
  'subscription.settings',
  'device.remove',
  'webhook.create',
  'webhook.update',
  'webhook.delete',
  'webhook.disable',
  'webhook.test',
  'client.update',
  'client.limits_update',
  'client.limits_delete',
  'client.reset_usage',
] as const;

export const AuditQuery = Type.Object(
  {
    session_id: Type.Optional(Type.String({ maxLength: 200, description: 'Only changes of this session.' })),
    client_id: Type.Optional(Type.String({ pattern: CLIENT_ID_PATTERN, description: 'Only changes of this client\'s sessions or subscription.' })),
    action: Type.Optional(Type.String({ pattern: '^[a-z]+\\.[a-z_]+$', maxLength: 40, description: `One action: ${AUDIT_ACTIONS.join(', ')}.` })),
    actor: Type.Optional(Type.String({ maxLength: 64, description: 'Only changes made with this token (its id, as `actor.token_id` shows it).' })),
    from: Type.Optional(DateTime),
    to: Type.Optional(DateTime),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
    cursor: Type.Optional(Type.String({ maxLength: 64 })),
  },
  { additionalProperties: false, description: 'Newest first; `from` inclusive, `to` exclusive; next_cursor pages on.' },
);

export const AuditEntry = Type.Object(
  {
    id: Type.Integer(),
    created_at: DateTime,
    actor: Type.Object({
      token_id: Type.Union([Type.String(), Type.Null()], { description: 'The id of the API token used (never the token); null for the command line and the server.' }),
      role: Type.String({ description: 'owner, agent, cli (the vpn-access command on the server), or server (the server itself: a webhook disabled after failing).' }),
    }),
    action: Type.String(),
    target: Type.Object({ type: Type.String(), id: Type.String() }),
    session_id: Type.Union([Type.String(), Type.Null()]),
    client_id: Type.Union([Type.String(), Type.Null()]),
    before: Type.Unknown({ description: 'The values before the change (null: nothing before).' }),
    after: Type.Unknown({ description: 'The values after the change (null: deleted).' }),
  },
  ext,
);

export const AuditPage = Type.Object(
  {
    entries: Type.Array(AuditEntry),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
  },
  ext,
);

export type AuditQuery = Static<typeof AuditQuery>;
export type AuditPage = Static<typeof AuditPage>;
