// Every storage operation, written once (repos/), in one table. The SQLite Store (store.ts), PgStore
// (pg/store.ts) and the async seam (control.ts) bind it to a runner; nothing else lists the operations.
import { migrationOps } from './migrations/index.ts';
import { auditOps } from './repos/audit.ts';
import { deviceOps } from './repos/devices.ts';
import { clientOps } from './repos/clients.ts';
import { eventOps } from './repos/events.ts';
import { grantOps } from './repos/grants.ts';
import { limitOps } from './repos/limits.ts';
import { nodeOps } from './repos/nodes.ts';
import { placementOps } from './repos/placements.ts';
import { quotaOps } from './repos/quota.ts';
import { repairOps } from './repos/repair.ts';
import { reportOps } from './repos/reports.ts';
import { requestReadOps } from './repos/request-reads.ts';
import { retentionOps } from './repos/retention.ts';
import { sessionOps } from './repos/sessions.ts';
import { supportAnswerOps } from './repos/support-answers.ts';
import { thresholdOps } from './repos/thresholds.ts';
import { tokenOps } from './repos/tokens.ts';
import { usageOps } from './repos/usage.ts';

export const STORE_OPS = {
  ...tokenOps,
  ...sessionOps,
  ...requestReadOps,
  ...limitOps,
  ...eventOps,
  ...retentionOps,
  ...nodeOps,
  ...placementOps,
  ...reportOps,
  ...grantOps,
  ...repairOps,
  ...usageOps,
  ...auditOps,
  ...quotaOps,
  ...deviceOps,
  ...clientOps,
  ...thresholdOps,
  ...supportAnswerOps,
  ...migrationOps,
};

export type StoreOps = typeof STORE_OPS;
