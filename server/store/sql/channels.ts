// The channels of PostgreSQL's change notices, which every instance listens to (pg/listener.ts).
export const CHANNELS = {
  events: 'vad_events',
  sessions: 'vad_sessions',
  limits: 'vad_limits',
  tokens: 'vad_tokens',
  nodes: 'vad_nodes',
  /** A node gave back an unused byte grant (repos/grants.ts); payload: the customer id. */
  grants: 'vad_grants',
  /** A support read asks the other instances (cluster/instance-ask.ts); payload: the question, never a token. */
  supportAsk: 'vad_support_ask',
  /** An instance wrote its answer to support_answers; payload: the request id and the instance id. */
  supportAnswers: 'vad_support_answers',
  /**
   * A statement committed on a table cached reads read (READ_TABLES); payload: the table's name.
   * Sent by a statement-level trigger (migration 21), once per table and transaction.
   */
  reads: 'vad_reads',
} as const;

/** The tables with the `vad_reads` trigger: on PostgreSQL only reads of these are cached (pg/read-cache.ts). */
export const READ_TABLES: readonly string[] = ['sessions', 'clients', 'limits'];

/**
 * Those of READ_TABLES whose INSERTs the trigger skips (a session creation notifies nothing): a cached
 * read of one must read one row by its key, and is kept only when it found it (a new row cannot change
 * that answer). test/store/pg-read-cache.test.ts checks every cached read of sessions reads it by id.
 */
export const INSERT_SILENT: readonly string[] = ['sessions'];
