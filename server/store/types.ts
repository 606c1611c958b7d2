// The shapes of the store's operations, re-exported from their repositories for callers of the store.
export type { Role, TokenInfo } from './repos/tokens.ts';
export { hashToken } from './repos/tokens.ts';
export type { EventFilter } from './repos/events.ts';
export type { NodeInfo, NodeFacts, RelayNode } from './repos/nodes.ts';
export type { NodeReportAdd } from './repos/reports.ts';
export type { UsageStep, UsageAdd, UsageQuery } from './repos/usage.ts';
export { USAGE_STEP_MS } from './repos/usage.ts';
export type { AuditInsert, AuditEntry } from './repos/audit.ts';
export type { NewSession } from './repos/sessions.ts';
export type { EventInsert } from '../domain.ts';
export type { ClientRow, ClientSessions } from './repos/clients.ts';
export type { AllLimits } from './repos/limits.ts';
export type { SessionStatusRead } from './repos/request-reads.ts';
export type { ThresholdCrossing, QueuedWith } from './repos/thresholds.ts';
