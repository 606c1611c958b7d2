// The webhooks slice: the customer's endpoints (list, add, delete, turn on and off, send a test) and
// each one's last deliveries, for Settings → Webhooks, which keeps what it shows in its own state;
// and Settings → Doctor's run of the server's checks (the other owner-only support action there).
import { ops, type SliceCreator, type WebhooksSlice } from '../state.ts';

export const createWebhooksSlice: SliceCreator<WebhooksSlice> = () => ({
  listWebhooks: () => ops().listWebhooks(),
  createWebhook: (body) => ops().createWebhook(body),
  deleteWebhook: (id) => ops().deleteWebhook(id),
  setWebhookEnabled: (id, enabled) => ops().setWebhookEnabled(id, enabled),
  webhookDeliveries: (id) => ops().webhookDeliveries(id),
  testWebhook: (id) => ops().testWebhook(id),
  runDoctor: () => ops().runDoctor(),
});
