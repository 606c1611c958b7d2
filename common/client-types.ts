// Wire shapes of the clients and devices API (GET/PATCH /v2/clients..., /v2/clients/{id}/limits,
// /reset-usage, /devices) as the desktop app sees them: main, preload and renderer alike. They
// come from the server's schemas. Neutral ground: no Node and no DOM.
import { LIMIT_FIELDS } from '../server/contract/schemas.ts';
import type { LimitsRecord, LimitsUpdate } from './api-types.ts';
import type { DeviceList } from '../server/contract/devices.ts';

export { CLIENT_STATUSES, MAX_LISTED_CLIENTS } from '../server/contract/clients.ts';
export type { Client, ClientList, ClientListQuery, ClientStatus, ClientUpdate } from '../server/contract/clients.ts';
export type { DeviceList } from '../server/contract/devices.ts';
export type Device = DeviceList['devices'][number];

/** Every client limit field (the override's and the template's), in the order the forms show them. */
export const CLIENT_LIMIT_KEYS: readonly string[] = LIMIT_FIELDS.client;
export type ClientLimitKey = (typeof LIMIT_FIELDS.client)[number];

/** The client's own override record (like /v2/customer/limits/client); null in a PATCH removes a field. */
export type ClientOverride = LimitsRecord;
export type ClientOverrideUpdate = LimitsUpdate;
