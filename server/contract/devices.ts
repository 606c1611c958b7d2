// Schemas of the device extension: /v2/clients/{client_id}/devices, the devices that fetched a
// client's subscription feed with an `x-hwid` header (what max_devices counts). Owner and agent
// tokens read; only an owner removes one. Everything here is an extension (`x-extension: true`).
import Type, { type Static } from 'typebox';
import { CLIENT_ID_PATTERN, DateTime } from './schemas.ts';

const ext = { 'x-extension': true } as const;

/** An `x-hwid` value as apps send it (hex digests, UUIDs, platform ids): 1 to 128 of A-Z a-z 0-9 . _ : + = @ -. */
export const HWID_PATTERN = '^[A-Za-z0-9._:+=@-]{1,128}$';
export const HWID_RULE = '1 to 128 characters of A-Z a-z 0-9 . _ : + = @ -';

const clientId = Type.String({ pattern: CLIENT_ID_PATTERN, description: '1 to 128 characters of A-Z a-z 0-9 . _ : @ -' });

export const ClientDevicesParams = Type.Object({ client_id: clientId });

export const ClientDeviceParams = Type.Object({
  client_id: clientId,
  hwid: Type.String({ pattern: HWID_PATTERN, description: `The device's hwid (${HWID_RULE}).` }),
});

const text = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const Device = Type.Object(
  {
    hwid: Type.String({ description: 'What the app sent as `x-hwid`.' }),
    device_os: text('`x-device-os` (Android, iOS, Windows ...); null: not sent.'),
    os_version: text('`x-ver-os`; null: not sent.'),
    device_model: text('`x-device-model`; null: not sent.'),
    user_agent: text('The User-Agent of the last fetch; null: not sent.'),
    first_seen: DateTime,
    last_seen: DateTime,
  },
  { ...ext, description: 'A device that fetched the client\'s subscription feed. Values not plain printable text were not kept (null).' },
);

export const DeviceList = Type.Object(
  { devices: Type.Array(Device, { description: 'The device seen last first.' }) },
  ext,
);

export type ClientDevicesParams = Static<typeof ClientDevicesParams>;
export type ClientDeviceParams = Static<typeof ClientDeviceParams>;
export type DeviceList = Static<typeof DeviceList>;
