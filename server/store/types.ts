// The shapes the store's operations take and give, re-exported from the repositories that own
// them, for callers that import them from the store.
export type { Role, TokenInfo } from './repos/tokens.ts';
export { hashToken } from './repos/tokens.ts';
export type { SessionFilter, NewSession } from './repos/sessions.ts';
export type { EventFilter } from './repos/events.ts';
export type { NodeInfo, NodePorts, NodeListeners, RelayNode } from './repos/nodes.ts';
export { NODE_TOKEN_PREFIX, NODE_UP_SECONDS } from './repos/nodes.ts';
export type { NodeReportAdd } from './repos/reports.ts';
export type { UsageStep, UsageAdd, UsageQuery, UsageSum } from './repos/usage.ts';
export { USAGE_STEP_MS } from './repos/usage.ts';
export type { AuditInsert, AuditEntry, AuditFilter } from './repos/audit.ts';
export { toAuditEntry, auditWhere } from './repos/audit.ts';
export type { QuotaBase } from './repos/quota.ts';
export type { EventInsert } from '../domain.ts';
export type { ClientRow, ClientSessions } from './repos/clients.ts';
