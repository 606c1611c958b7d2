// Events as a person reads them: the stream's per-connection events are "Connection opened" and
// "Connection closed" (not session_start / session_end), counters and heartbeats say what they
// are, and changes from the audit trail (created, paused, resumed, limits, expiry) read in words.
// Each has a tone for its colour: a closed connection is ordinary (neutral), red is only for
// refusals, caps and errors.

export type EventTone = 'ok' | 'info' | 'neutral' | 'bad';

export interface EventWords {
  label: string;
  tone: EventTone;
}

const STREAM: Record<string, EventWords> = {
  session_start: { label: 'Connection opened', tone: 'ok' },
  session_end: { label: 'Connection closed', tone: 'neutral' },
  session_stats: { label: 'Traffic update', tone: 'info' },
  session_heartbeat: { label: 'Still connected', tone: 'neutral' },
};

/** The stream's event types in the order a filter lists them. */
export const EVENT_TYPES = ['session_start', 'session_end', 'session_stats', 'session_heartbeat'] as const;

/** A stream event's type in words; an unknown type is shown as it came, neutral. */
export function eventWords(type: string): EventWords {
  return STREAM[type] ?? { label: type.replace(/_/g, ' '), tone: 'neutral' };
}

/** Changes recorded by the audit trail that a session's timeline shows: the chip, and the verb after it ("paused by …"). */
const AUDIT: Record<string, EventWords & { verb: string }> = {
  'session.create': { label: 'Created', verb: 'created', tone: 'info' },
  'session.pause': { label: 'Paused', verb: 'paused', tone: 'neutral' },
  'session.resume': { label: 'Resumed', verb: 'resumed', tone: 'ok' },
  'session.expire': { label: 'Expired', verb: 'expired', tone: 'bad' },
  'limits.update': { label: 'Limits changed', verb: 'limits changed', tone: 'info' },
  'limits.delete': { label: 'Limits removed', verb: 'limits removed', tone: 'info' },
};

/** The words of an audit action the timeline shows, or undefined for one it does not. */
export function auditWords(action: string): (EventWords & { verb: string }) | undefined {
  return AUDIT[action];
}
