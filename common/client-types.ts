// Wire shapes of the clients and devices API (GET/PATCH /v2/clients..., /v2/clients/{id}/limits,
// /reset-usage, /devices) as the desktop app sees them: main, preload and renderer alike. They
// come from the server's schemas. Neutral ground: no Node and no DOM.
import type { LimitsRecord, LimitsUpdate } from './api-types.ts';
import type { DeviceList } from '../server/contract/devices.ts';

// Values from client-names.ts only: clients.ts and schemas.ts would bring the schema library into the renderer.
export { CLIENT_LIMIT_KEYS, CLIENT_STATUSES, MAX_LISTED_CLIENTS, type ClientLimitKey, type ClientStatus } from '../server/contract/client-names.ts';
export type { Client, ClientList, ClientListQuery, ClientUpdate } from '../server/contract/clients.ts';
export type { DeviceList } from '../server/contract/devices.ts';
export type Device = DeviceList['devices'][number];

/** The client's own override record (like /v2/customer/limits/client); null in a PATCH removes a field. */
export type ClientOverride = LimitsRecord;
export type ClientOverrideUpdate = LimitsUpdate;
