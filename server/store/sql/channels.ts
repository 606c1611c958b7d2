// The channels of PostgreSQL's change notices, which every instance listens to (pg/listener.ts).
export const CHANNELS = {
  events: 'vad_events',
  sessions: 'vad_sessions',
  limits: 'vad_limits',
  tokens: 'vad_tokens',
  nodes: 'vad_nodes',
} as const;
