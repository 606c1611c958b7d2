// A client's devices, one SQL text for both databases: one row per (customer, client, hwid), made when
// an app fetches the subscription feed with an `x-hwid` header, last_seen touched on later fetches.
// max_devices (a client limit) decides whether a new device gets in (server/subscriptions/devices.ts).
// Registering runs under the client's lock, so concurrent fetches on several instances never pass the
// limit together, and a client's rows never exceed it (or DEVICE_CAP without one).
import { isoNow } from '../../time.ts';
import { all, get, lock, marks, run, tx, type Op } from '../sql/op.ts';

/** The most devices kept for a client that has no max_devices: new ones beyond are served, not recorded. */
export const DEVICE_CAP = 250;

/** What a fetch says of its device (the hwid checked, the other fields bounded and printable, or null). */
export interface DeviceInfo {
  hwid: string;
  device_os: string | null;
  os_version: string | null;
  device_model: string | null;
  user_agent: string | null;
}

export interface DeviceRow extends DeviceInfo {
  first_seen: string;
  last_seen: string;
}

/**
 * What registering did: `known` (last_seen touched), `added`, `refused` (max_devices other
 * devices are registered already) or `unrecorded` (no limit, DEVICE_CAP reached: served, not kept).
 */
export type DeviceOutcome = 'known' | 'added' | 'refused' | 'unrecorded';

const COLUMNS = 'hwid, device_os, os_version, device_model, user_agent, first_seen, last_seen';

/**
 * Registers one fetch's device; `max`: the client's max_devices, null for none. A known device always
 * gets in (lowering the limit removes nobody; the owner does); a new one only while fewer than `max` are.
 */
const registerDevice = tx(function* (customerId: string, clientId: string, device: DeviceInfo, max: number | null): Op<DeviceOutcome> {
  yield* lock(`devices:${customerId}:${clientId}`);
  const now = isoNow();
  const touched = yield* run(
    `UPDATE client_devices SET last_seen = ?, device_os = COALESCE(?, device_os), os_version = COALESCE(?, os_version),
       device_model = COALESCE(?, device_model), user_agent = COALESCE(?, user_agent)
     WHERE customer_id = ? AND client_id = ? AND hwid = ?`,
    now, device.device_os, device.os_version, device.device_model, device.user_agent, customerId, clientId, device.hwid,
  );
  if (touched > 0) return 'known';
  const count = Number((yield* get<{ n: number | string }>('SELECT COUNT(*) AS n FROM client_devices WHERE customer_id = ? AND client_id = ?', customerId, clientId))!.n);
  if (max !== null && count >= max) return 'refused';
  if (count >= Math.max(max ?? 0, DEVICE_CAP)) return 'unrecorded';
  yield* run(
    `INSERT INTO client_devices (customer_id, client_id, ${COLUMNS}) VALUES (${marks(9)})`,
    customerId, clientId, device.hwid, device.device_os, device.os_version, device.device_model, device.user_agent, now, now,
  );
  return 'added';
});

/** The client's devices, the one seen last first. */
const listDevices = (customerId: string, clientId: string) => all<DeviceRow>(
  `SELECT ${COLUMNS} FROM client_devices WHERE customer_id = ? AND client_id = ? ORDER BY last_seen DESC, hwid LIMIT ?`,
  customerId, clientId, 1000,
);

/** Removes one device (its slot is free at once); the row removed, or undefined when unknown. */
const removeDevice = (customerId: string, clientId: string, hwid: string) =>
  get<DeviceRow>(`DELETE FROM client_devices WHERE customer_id = ? AND client_id = ? AND hwid = ? RETURNING ${COLUMNS}`, customerId, clientId, hwid);

export const deviceOps = { registerDevice, listDevices, removeDevice };
