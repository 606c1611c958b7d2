// `vpn-access node run`: a data-plane node of the cluster. It runs the same data plane as
// `serve` (server/dataplane) with its own DataPlaneDeps, and connects OUT to the control plane
// over a WebSocket (server/cluster/node-channel.ts describes the messages):
//
//  - what it may carry: only the sessions the control plane placed on it, with their customers'
//    limits and counter sums (the `state` message, re-sent on every change). Pause and a session
//    no longer placed here cut its connections at once; `removed` cuts all and stops the node.
//  - what it reports: counter DELTAS (bytes moved since the previous report) and the session
//    events, at least every second. What it counts goes to its journal in the data folder
//    (<data-dir>/node-journal.log, cluster/journal.ts) before it can be lost with the process;
//    each report has a sequence number and stays in the journal until the control plane
//    acknowledges it, so neither a control-plane restart nor a node's kill -9 loses a counted
//    byte; reports are resent after a reconnection and the control plane ignores a seq it
//    already applied.
//  - without a reachable control plane it keeps carrying the sessions it knows with the last
//    limits it had, and reconnects with backoff, trying the control URLs in turn.
//
// This file composes the parts, each with one job: view.ts (the state as the data plane's
// store), listeners.ts (data plane, TLS, relay listener), state.ts (a state applied),
// shares.ts (grants and releases), claims.ts (central max_sessions, read-your-writes),
// reporter.ts (journal, reports, acks, boot id), channel-client.ts (the channel itself).
import { mkdirSync } from 'node:fs';
import type { NodeState } from '../cluster/node-channel.ts';
import type { CounterJournal } from '../cluster/journal.ts';
import { ControlChannel, type ChannelMessage } from './channel-client.ts';
import { NodeView } from './view.ts';
import { NodeGeo } from './geo-routes.ts';
import { openNodeTls, startListeners, type NodeListeners, type NodePorts } from './listeners.ts';
import { applyState } from './state.ts';
import { NodeShares, type Owners } from './shares.ts';
import { NodeClaims, type ClaimedMessage } from './claims.ts';
import { NodeReporter, openNodeJournal } from './reporter.ts';
import type { NodeRunOptions } from './options.ts';
import { answerInspect } from './inspect.ts';

export type { NodeRunOptions } from './options.ts';
export { pinnedTls } from './channel-client.ts';

export interface RunningNode {
  ports: NodePorts;
  /** Resolves with why the node stopped ('removed' when the control plane removed it, 'closed'). */
  stopped: Promise<'removed' | 'closed'>;
  close(): Promise<void>;
}

/** The parts a running node is made of, as shutdown needs them. */
interface NodeParts {
  journal: CounterJournal;
  listeners: NodeListeners;
  channel: ControlChannel;
  shares: NodeShares;
  claims: NodeClaims;
  reporter: NodeReporter;
}

export async function runNode(opts: NodeRunOptions): Promise<RunningNode> {
  const { log } = opts;
  mkdirSync(opts.dataDir, { recursive: true });
  const journal = openNodeJournal(opts.dataDir, log);
  const tls = await openNodeTls(opts);
  const view = new NodeView(journal);
  const geo = new NodeGeo();
  const listeners = await startListeners(opts, { tls, view, journal, geo });
  const { dataPlane, ports } = listeners;
  /** Which customer and client each session counts for (kept after a session leaves the state). */
  const owners: Owners = new Map();

  let resolveStopped!: (why: 'removed' | 'closed') => void;
  const stopped = new Promise<'removed' | 'closed'>((r) => (resolveStopped = r));
  const shutdown = (why: 'removed' | 'closed') => stopNode(parts, why, resolveStopped);
  const onMessage = (msg: ChannelMessage) => {
    if (msg.type === 'state') {
      parts.reporter.stateArrived();
      applyState(msg as NodeState, { view, dataPlane, owners, geo, tls, shares: parts.shares, log });
    } else if (msg.type === 'claimed') parts.claims.answer(msg as ClaimedMessage);
    else if (msg.type === 'ack' && typeof msg.seq === 'number' && Number.isSafeInteger(msg.seq)) parts.reporter.ack(msg.seq, msg.hello);
    else if (msg.type === 'inspect') answerInspect(msg, dataPlane, parts.channel);
    else if (msg.type === 'removed') {
      log.warn({}, 'this node was removed from the control plane\'s catalogue; stopping');
      void shutdown('removed');
    }
  };
  const channel = new ControlChannel({ controls: opts.controls, token: opts.token, ca: opts.controlCa, pin: opts.controlPin, log, hello: () => parts.reporter.hello(), onMessage });
  const shares = new NodeShares({ journal, dataPlane, channel, owners });
  const claims = new NodeClaims({ channel, owners, dataPlane, view });
  view.claim = (sessionId, row) => claims.claim(sessionId, row);
  const reporter = new NodeReporter({ journal, channel, ports, dataPlane, relay: listeners.relay, acks: shares });
  const parts: NodeParts = { journal, listeners, channel, shares, claims, reporter };
  shares.start();
  reporter.start();
  channel.connect();
  return { ports, stopped, close: () => shutdown('closed') };
}

/**
 * Stops a node: the data plane first, its last counters into a report (sent now if the channel
 * is up, else by the next run), a moment for its ack, then the listeners and the journal.
 * Nothing happens when the node is already stopping.
 */
async function stopNode(p: NodeParts, why: 'removed' | 'closed', stopped: (why: 'removed' | 'closed') => void): Promise<void> {
  if (!p.channel.stop()) return;
  await p.listeners.dataPlane.close();
  p.reporter.stop();
  p.shares.stop();
  p.claims.settleAll();
  // The data plane's last counters: into a report that the next run sends.
  p.reporter.tick();
  await p.channel.close(why === 'removed' || p.journal.reports.length === 0);
  await p.listeners.close();
  p.journal.close();
  stopped(why);
}
