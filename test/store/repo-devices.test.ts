// The devices repository on both databases: a new device is let in while fewer than max_devices
// are registered, a known one is always let in (last_seen touched, what it says refreshed), the
// list is newest first, removing frees a slot, concurrent registrations never pass the limit,
// without a limit the rows stop at DEVICE_CAP (served, not recorded), and clients are apart.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEVICE_CAP, deviceOps as ops, type DeviceInfo } from '../../server/store/repos/devices.ts';
import { tokenOps } from '../../server/store/repos/tokens.ts';
import { eachDialect } from '../helpers/dialects.ts';
import { ISO_MS_Z } from '../helpers/server.ts';

const dev = (hwid: string, more: Partial<DeviceInfo> = {}): DeviceInfo => ({ hwid, device_os: null, os_version: null, device_model: null, user_agent: null, ...more });

eachDialect('devices: limit, known devices, newest first, removal frees a slot', async (db) => {
  const acme = (await db.run(tokenOps.ensureCustomer('acme'))).id;
  assert.equal(await db.run(ops.registerDevice(acme, 'bob', dev('a1', { device_os: 'Android', os_version: '14', device_model: 'Pixel 8', user_agent: 'Happ/3.1' }), 2)), 'added');
  await sleep(5);
  assert.equal(await db.run(ops.registerDevice(acme, 'bob', dev('b2'), 2)), 'added');
  assert.equal(await db.run(ops.registerDevice(acme, 'bob', dev('c3'), 2)), 'refused', 'a third device with max_devices 2');
  let list = await db.run(ops.listDevices(acme, 'bob'));
  assert.deepEqual(list.map((d) => d.hwid), ['b2', 'a1'], 'newest last_seen first; the refused one is not kept');
  const a1 = list[1];
  assert.deepEqual([a1.device_os, a1.os_version, a1.device_model, a1.user_agent], ['Android', '14', 'Pixel 8', 'Happ/3.1']);
  assert.match(a1.first_seen, ISO_MS_Z);
  assert.equal(a1.first_seen, a1.last_seen);

  // A known device is let in even at the limit; last_seen moves, first_seen stays, what it did not say stays.
  await sleep(5);
  assert.equal(await db.run(ops.registerDevice(acme, 'bob', dev('a1', { os_version: '15' }), 2)), 'known');
  list = await db.run(ops.listDevices(acme, 'bob'));
  assert.deepEqual(list.map((d) => d.hwid), ['a1', 'b2']);
  assert.equal(list[0].first_seen, a1.first_seen);
  assert.ok(list[0].last_seen > a1.last_seen);
  assert.deepEqual([list[0].device_os, list[0].os_version], ['Android', '15']);
  // Lowering the limit removes nobody: known devices are still let in.
  assert.equal(await db.run(ops.registerDevice(acme, 'bob', dev('b2'), 1)), 'known');

  // Removal returns the row and frees the slot; an unknown hwid removes nothing.
  const removed = await db.run(ops.removeDevice(acme, 'bob', 'b2'));
  assert.equal(removed?.hwid, 'b2');
  assert.equal(await db.run(ops.removeDevice(acme, 'bob', 'b2')), undefined);
  assert.equal(await db.run(ops.registerDevice(acme, 'bob', dev('c3'), 2)), 'added');
  assert.equal(await db.run(ops.registerDevice(acme, 'bob', dev('d4'), 2)), 'refused');

  // Another client, and another customer's client of the same name, have their own devices.
  const globex = (await db.run(tokenOps.ensureCustomer('globex'))).id;
  assert.equal(await db.run(ops.registerDevice(acme, 'carol', dev('a1'), 1)), 'added');
  assert.equal(await db.run(ops.registerDevice(globex, 'bob', dev('a1'), 1)), 'added');
  assert.deepEqual((await db.run(ops.listDevices(globex, 'bob'))).map((d) => d.hwid), ['a1']);
  assert.equal(await db.run(ops.removeDevice(globex, 'bob', 'c3')), undefined, 'acme\'s device is not globex\'s');
  assert.deepEqual((await db.run(ops.listDevices(acme, 'bob'))).map((d) => d.hwid).sort(), ['a1', 'c3']);
  assert.deepEqual(await db.run(ops.listDevices(acme, 'nobody')), []);
});

eachDialect('devices: concurrent registrations never pass max_devices', async (db) => {
  const acme = (await db.run(tokenOps.ensureCustomer('acme'))).id;
  const outcomes = await Promise.all(['p', 'q', 'r', 's', 't', 'u'].map((h) => db.run(ops.registerDevice(acme, 'bob', dev(h), 2))));
  assert.equal(outcomes.filter((o) => o === 'added').length, 2, outcomes.join());
  assert.equal(outcomes.filter((o) => o === 'refused').length, 4, outcomes.join());
  assert.equal((await db.run(ops.listDevices(acme, 'bob'))).length, 2);
});

eachDialect('devices: without a limit the rows stop at DEVICE_CAP; new devices beyond are served, not recorded', async (db) => {
  const acme = (await db.run(tokenOps.ensureCustomer('acme'))).id;
  const now = new Date().toISOString();
  for (let i = 0; i < DEVICE_CAP; i++) {
    await db.sql('INSERT INTO client_devices (customer_id, client_id, hwid, first_seen, last_seen) VALUES (?, ?, ?, ?, ?)', acme, 'bob', `h${i}`, now, now);
  }
  assert.equal(await db.run(ops.registerDevice(acme, 'bob', dev('new'), null)), 'unrecorded');
  assert.equal(await db.run(ops.registerDevice(acme, 'bob', dev('h7'), null)), 'known');
  assert.equal((await db.sql<{ n: number | string }>('SELECT COUNT(*) AS n FROM client_devices'))[0].n.toString(), String(DEVICE_CAP));
  // A limit above the cap is the bound instead.
  assert.equal(await db.run(ops.registerDevice(acme, 'bob', dev('new'), DEVICE_CAP + 1)), 'added');
  assert.equal(await db.run(ops.registerDevice(acme, 'bob', dev('newer'), DEVICE_CAP + 1)), 'refused');
});
