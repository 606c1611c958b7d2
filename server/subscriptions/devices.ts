// Device limits on subscription feeds, as the apps that send a device id expect them (Happ,
// v2RayTun, FlClashX, Koala Clash; the headers Remnawave reads): a fetch carrying `x-hwid`
// registers its device for the client (with `x-device-os`, `x-ver-os`, `x-device-model` and the
// User-Agent); while the client's max_devices is set, a new device beyond it, or an app sending
// no `x-hwid`, gets 200 with an empty body, the `x-hwid-*` flags and an `announce` saying why,
// and no links. The browser page is no device. Only feeds read max_devices: connections are not
// limited by it (the data plane never looks at the field).
import { ApiError } from '../contract/errors.ts';
import { HWID_PATTERN, HWID_RULE, type DeviceList } from '../contract/devices.ts';
import { clientLimitsInForce } from '../contract/client-limits.ts';
import type { ControlStore } from '../store/control.ts';
import type { DeviceInfo, DeviceRow } from '../store/repos/devices.ts';

export type DeviceStore = Pick<ControlStore, 'getLimits' | 'getClient' | 'registerDevice' | 'listDevices' | 'removeDevice'>;

const HWID = new RegExp(HWID_PATTERN);
const PRINTABLE = /^[\x20-\x7e]+$/;
/** How much of each descriptive header is kept (longer values are cut). */
const KEEP = { device_os: 64, os_version: 64, device_model: 128, user_agent: 256 } as const;

/**
 * The client's max_devices in force (its override, else the client template): a positive number,
 * or null (absent or 0: no limit). The one place the limit is read.
 */
export async function maxDevicesOf(store: Pick<DeviceStore, 'getLimits' | 'getClient'>, customerId: string, clientId: string): Promise<number | null> {
  const [template, client] = await Promise.all([store.getLimits(customerId, 'client'), store.getClient(customerId, clientId)]);
  const max = clientLimitsInForce(template, client?.override?.fields).limits.max_devices;
  return typeof max === 'number' && max > 0 ? max : null;
}

type Headers = Record<string, string | string[] | undefined>;

/** A descriptive header: trimmed, cut to `max`, null unless plain printable ASCII (anything else is ignored). */
function described(v: string | string[] | undefined, max: number): string | null {
  if (typeof v !== 'string') return null;
  const t = v.trim().slice(0, max).trim();
  return t && PRINTABLE.test(t) ? t : null;
}

/**
 * The device a fetch names, or null when it sends no `x-hwid` (or an empty one). A malformed
 * `x-hwid` (wrong characters, too long, sent twice) is 400 invalid_request; descriptive headers
 * that are not printable text are ignored, long ones cut.
 */
export function deviceOf(headers: Headers): DeviceInfo | null {
  const raw = headers['x-hwid'];
  if (raw === undefined || raw === '') return null;
  const hwid = typeof raw === 'string' ? raw.trim() : undefined;
  if (hwid === undefined || !HWID.test(hwid)) {
    throw new ApiError('invalid_request', `Invalid request: the x-hwid header must be ${HWID_RULE}, sent once.`, { location: 'headers', header: 'x-hwid' });
  }
  return {
    hwid,
    device_os: described(headers['x-device-os'], KEEP.device_os),
    os_version: described(headers['x-ver-os'], KEEP.os_version),
    device_model: described(headers['x-device-model'], KEEP.device_model),
    user_agent: described(headers['user-agent'], KEEP.user_agent),
  };
}

/** What a feed fetch may get: links (`limited`: a device limit is in force), or no links and why. */
export type DeviceVerdict =
  | { serve: true; limited: boolean }
  | { serve: false; reason: 'max_devices_reached' | 'hwid_not_supported'; max: number };

const base64 = (text: string) => `base64:${Buffer.from(text, 'utf8').toString('base64')}`;

/** The headers of a refused fetch (besides the feed's usual ones), `announce` in words. */
export function refusalHeaders(v: Extract<DeviceVerdict, { serve: false }>): Record<string, string> {
  const devices = v.max === 1 ? 'one device' : `${v.max} devices`;
  const words =
    v.reason === 'max_devices_reached'
      ? `Device limit reached: this subscription is for ${devices}, all of them in use. Ask your provider to remove one you no longer use.`
      : `This subscription is for ${devices}, and this app does not identify its device (no x-hwid header). Use an app that does, such as Happ or v2RayTun.`;
  return {
    'x-hwid-active': 'true',
    'x-hwid-limit': 'true',
    ...(v.reason === 'max_devices_reached' ? { 'x-hwid-max-devices-reached': 'true' } : { 'x-hwid-not-supported': 'true' }),
    announce: base64(words),
  };
}

/** A device as the API shows it. */
function shown(d: DeviceRow): DeviceList['devices'][number] {
  return { hwid: d.hwid, device_os: d.device_os, os_version: d.os_version, device_model: d.device_model, user_agent: d.user_agent, first_seen: d.first_seen, last_seen: d.last_seen };
}

export class DeviceService {
  private readonly store: DeviceStore;

  constructor(store: DeviceStore) {
    this.store = store;
  }

  /** Registers the fetch's device (known: last_seen; new: while a slot is free) and decides what it gets. */
  async admit(customerId: string, clientId: string, device: DeviceInfo | null): Promise<DeviceVerdict> {
    const max = await maxDevicesOf(this.store, customerId, clientId);
    if (!device) return max === null ? { serve: true, limited: false } : { serve: false, reason: 'hwid_not_supported', max };
    const outcome = await this.store.registerDevice(customerId, clientId, device, max);
    if (outcome === 'refused') return { serve: false, reason: 'max_devices_reached', max: max! };
    return { serve: true, limited: max !== null };
  }

  async list(customerId: string, clientId: string): Promise<DeviceList> {
    return { devices: (await this.store.listDevices(customerId, clientId)).map(shown) };
  }

  /** Removes the device (its slot is free at once); device_not_found when the client has none of that hwid. */
  async remove(customerId: string, clientId: string, hwid: string): Promise<DeviceList['devices'][number]> {
    const row = await this.store.removeDevice(customerId, clientId, hwid);
    if (!row) throw new ApiError('device_not_found', 'This client has no device with this hwid.', { client_id: clientId, hwid });
    return shown(row);
  }
}
