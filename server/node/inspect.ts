// A node's answers to support's questions (cluster/node-inspect.ts): {type:'inspect', id, what,
// session | customer+client} answered at once from the data plane's memory with
// {type:'inspected', id, connections | refusals}. Nothing is stored or sent unless asked.
import type { DataPlane } from '../dataplane/api.ts';
import type { ChannelLink, ChannelMessage } from './channel-client.ts';

export function answerInspect(msg: ChannelMessage, dataPlane: DataPlane, channel: ChannelLink): void {
  const m = msg as Record<string, unknown>;
  if (typeof m.id !== 'number' || !channel.open) return;
  const session = typeof m.session === 'string' ? m.session : undefined;
  let answer: object = {};
  if (m.what === 'connections' && session) answer = { connections: dataPlane.connectionsOf?.(session) ?? [] };
  else if (m.what === 'refusals' && session) answer = { refusals: dataPlane.refusalsOf?.({ sessionId: session }) };
  else if (m.what === 'refusals' && typeof m.customer === 'string' && typeof m.client === 'string') {
    answer = { refusals: dataPlane.refusalsOf?.({ customerId: m.customer, clientId: m.client }) };
  }
  channel.send({ type: 'inspected', id: m.id, ...answer });
}
