// Schemas of the support extension: a session's live connections and the recent refusals of a
// session or a client (why a client's connection got nothing), gathered from this instance's
// data plane, its connected nodes and the cluster's other instances on read. Owner and agent tokens read. Everything here is an
// extension (`x-extension: true`).
import Type, { type Static } from 'typebox';
import { CLIENT_ID_PATTERN, DateTime } from './schemas.ts';

const ext = { 'x-extension': true } as const;

const Transport = Type.Union(
  [Type.Literal('ws'), Type.Literal('tcp'), Type.Literal('tls'), Type.Literal('proxy_connect'), Type.Literal('proxy_request'), Type.Literal('socks5')],
  { description: 'VLESS over WebSocket, raw TCP or TLS; the HTTP proxy tunnel (CONNECT) or a plain-http request through it; SOCKS5 on the proxy port (CONNECT or UDP ASSOCIATE).' },
);

const Node = Type.String({ description: 'The node that carries it: a catalogue node\'s name, or `local` (the server\'s own data plane).' });

const UnansweredInstances = Type.Array(Type.String(), {
  description:
    'Other control-plane instances of the cluster (PostgreSQL; seen within the last minute) that did not answer within a second: ' +
    'what their own data planes and their nodes hold is missing; `*` when the database could not be reached to ask them. ' +
    'Always empty on SQLite (one instance).',
});

export const LiveConnection = Type.Object(
  {
    id: Type.String({ description: 'The connection\'s id (stable while it is open).' }),
    transport: Transport,
    client_address: Type.String({ description: 'The client\'s address as the data plane sees it.' }),
    node: Node,
    destination: Type.Object({ host: Type.String(), port: Type.Integer() }, { description: 'Where it goes: host and port only, never a path or payload.' }),
    uploaded_bytes: Type.Integer({ minimum: 0 }),
    downloaded_bytes: Type.Integer({ minimum: 0 }),
    upload_speed: Type.Integer({ minimum: 0, description: 'Bytes a second over the last one to two seconds.' }),
    download_speed: Type.Integer({ minimum: 0, description: 'Bytes a second over the last one to two seconds.' }),
    opened_at: DateTime,
  },
  ext,
);

export const ConnectionList = Type.Object(
  {
    connections: Type.Array(LiveConnection, { description: 'Oldest first; at most the per-session connection cap per node.' }),
    unanswered_nodes: Type.Array(Type.String(), { description: 'Nodes not heard from, whose connections are missing: a node connected to an instance that answered but did not answer itself in time, or the session\'s node when no instance that answered carries its channel.' }),
    unanswered_instances: UnansweredInstances,
  },
  ext,
);

export const Refusal = Type.Object(
  {
    at: DateTime,
    reason: Type.String({
      description:
        'Why: an admission reason (paused, ended, expired, not_reusable, max_reconnections, max_sessions, too_many_connections, ' +
        'connection_rate, session_cap, client_cap, global_cap, unknown, unavailable, client_disabled, client_expired) or a proxy ' +
        'error code (proxy_auth_required, a malformed user name\'s code such as proxy_unknown_param, location_unavailable, destination_forbidden).',
    }),
    transport: Transport,
    client_address: Type.String(),
    node: Node,
    session_id: Type.String({ description: 'The session the connection asked for.' }),
  },
  ext,
);

export const RefusalList = Type.Object(
  {
    refusals: Type.Array(Refusal, { description: 'Newest first, the last 100 (repeats from one address within a second are counted, not listed).' }),
    counts_last_hour: Type.Record(Type.String(), Type.Integer({ minimum: 0 }), { description: 'Refusals per reason over the last hour.' }),
    unanswered_nodes: Type.Array(Type.String(), { description: 'Nodes not heard from, whose refusals are missing: a node connected to an instance that answered but did not answer itself in time, or the session\'s node when no instance that answered carries its channel.' }),
    unanswered_instances: UnansweredInstances,
  },
  ext,
);

export const ClientRefusalParams = Type.Object({ client_id: Type.String({ pattern: CLIENT_ID_PATTERN, description: '1 to 128 characters of A-Z a-z 0-9 . _ : @ -' }) });

export type ConnectionList = Static<typeof ConnectionList>;
export type RefusalList = Static<typeof RefusalList>;
export type ClientRefusalParams = Static<typeof ClientRefusalParams>;
