// /v2/clients/{client_id}/devices (extension): the devices that fetched a client's subscription
// feed with an `x-hwid` header, what the client's max_devices counts. Owner and agent tokens
// read; only an owner removes a device (its slot is free at once), and each removal is audited.
import type { FastifyInstance } from 'fastify';
import { apiActor, type AuditTrail } from '../audit/trail.ts';
import { ClientDeviceParams, ClientDevicesParams, DeviceList } from '../contract/devices.ts';
import { callerOf } from '../plugins/auth.ts';
import type { DeviceService } from '../subscriptions/devices.ts';
import { bearer, responses } from './common.ts';

/** Under the /v2 prefix: auth, token rate limit and tenancy come from that context. */
export async function deviceRoutes(app: FastifyInstance, devices: DeviceService, audit?: AuditTrail): Promise<void> {
  const tags = ['clients'];

  app.get<{ Params: ClientDevicesParams }>('/clients/:client_id/devices', {
    schema: {
      summary: 'List the devices that fetched a client\'s subscription feed (extension)',
      description:
        'Every device whose app sent `x-hwid` when it fetched the feed, the one seen last first; null where the app did not say. ' +
        'A client with none (or unknown) has an empty list. The client limit max_devices counts them.',
      tags,
      security: bearer,
      params: ClientDevicesParams,
      response: responses({ 200: DeviceList }, 400, 401, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request) => devices.list(callerOf(request).customerId, request.params.client_id),
  });

  app.delete<{ Params: ClientDeviceParams }>('/clients/:client_id/devices/:hwid', {
    config: { ownerOnly: 'devices' },
    schema: {
      summary: 'Remove a device of a client: its slot under max_devices is free at once (extension)',
      description: 'The device may fetch the feed again later, and then counts as a new device. 404 device_not_found when the client has no such device.',
      tags,
      security: bearer,
      params: ClientDeviceParams,
      response: responses({ 204: { type: 'null' } }, 400, 401, 403, 404, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request, reply) => {
      const caller = callerOf(request);
      const { client_id: clientId, hwid } = request.params;
      const removed = await devices.remove(caller.customerId, clientId, hwid);
      await audit?.record(caller.customerId, apiActor(caller), {
        action: 'device.remove',
        target: { type: 'device', id: hwid },
        clientId,
        before: removed,
        after: null,
      });
      return reply.code(204).send();
    },
  });
}
