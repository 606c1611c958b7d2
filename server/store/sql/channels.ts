// The channels of PostgreSQL's change notices, which every instance listens to (pg/listener.ts).
export const CHANNELS = {
  events: 'vad_events',
  sessions: 'vad_sessions',
  limits: 'vad_limits',
  tokens: 'vad_tokens',
  nodes: 'vad_nodes',
  /** A support read asks the other instances (cluster/instance-ask.ts); payload: the question, never a token. */
  supportAsk: 'vad_support_ask',
  /** An instance wrote its answer to support_answers; payload: the request id and the instance id. */
  supportAnswers: 'vad_support_answers',
} as const;
