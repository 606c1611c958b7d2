// Crash repair's share of the stores (server/cluster/crash-repair.ts has the rules): what a
// repaired session becomes, the two events stored for it, and what the operations answer.
import { eventInsert, type EventInsert } from '../domain.ts';
import type { SessionEvent } from '../contract/schemas.ts';

/** How long without any report a node is taken for dead: its sessions are repaired and moved. */
export const NODE_SILENT_SECONDS = 15;

/** An event a repair stored, with its customer (to wake that customer's streams). */
export interface RepairedEvent {
  customerId: string;
  event: SessionEvent;
}

/** What a node said of its process in its channel's first report (store.nodeHello). */
export type NodeHello = 'same' | 'new' | 'new_after_repair';

/** A session row a repair changed: as the UPDATE returned it (status is the new one). */
export interface RepairedRow {
  seq: number;
  id: string;
  customer_id: string;
  duration: number;
  uploaded_bytes: number;
  downloaded_bytes: number;
}

/** The status an active session gets when the node carrying it is gone: as its last connection closing would. */
export const REPAIRED_STATUS_SQL = (reusable: string) => `CASE WHEN ${reusable} THEN 'idle' ELSE 'ended' END`;

/** session_stats then session_end for each repaired session (in creation order), with its stored counters. */
export function repairEvents(rows: RepairedRow[], createdAt: string): EventInsert[] {
  const out: EventInsert[] = [];
  for (const r of [...rows].sort((x, y) => x.seq - y.seq)) {
    for (const type of ['session_stats', 'session_end'] as const) {
      out.push(eventInsert({
        customerId: r.customer_id,
        sessionId: r.id,
        type,
        duration: r.duration,
        uploaded_bytes: r.uploaded_bytes,
        downloaded_bytes: r.downloaded_bytes,
      }, createdAt));
    }
  }
  return out;
}
