// The control plane's end of a data-plane node's channel (`vpn-access node run`, server/node/run.ts):
// a WebSocket at NODE_CHANNEL_PATH on the API port, authenticated by the node's token (its own
// kind, hashed in the nodes table; API tokens never match). Works on SQLite and PostgreSQL alike
// through services.data. Messages are JSON, one per frame:
//
//   node → control plane
//     {type:'report', seq, ports (with relay_port, relay_pcs, tls, tls_pcs, clock_skew_ms), open:[{zone,count}], counters:{[session]:{up,down,status?,duration?,connections?}}, events:[...]}
//       at least every second: it is the node's contact (touchNode with its ports); seq 0 is
//       contact only (nothing to count), not acknowledged. A channel's first report also names
//       the node's process: {boot, boot_seq} (crash-repair.ts).
//       `up`/`down` are bytes moved since the node's previous report: they are ADDED to the
//       session's stored counters, never written over them. Each report is acknowledged by its
//       seq; a seq at or below the last one applied for this node is acknowledged again and
//       otherwise ignored, so a report resent after a lost acknowledgement is not counted twice.
//       Any report may carry relayed:{[entry]:{[session hash]:{up,down}}}, what the node's geo relay
//       carried for other entries since its last report (relay-audit.ts; lost with its frame).
//   control plane → node
//     {type:'state', sessions, limits, sums, bases?, shares?, shareSeq?, zone, public_host, zones, relays, relay_entries}
//       the sessions placed on the node, their customers' limits, counter sums and the node's
//       shares of them (shares.ts); its zone and public host (its certificate's name), the zone
//       catalogue and the other up nodes' geo relays (geo.ts); sent on connect and whenever it changed (checked every
//       STATE_MS, and at once after a pause or limits change made through this process or,
//       on PostgreSQL, announced by another instance's NOTIFY on vad_sessions/vad_limits/vad_nodes);
//     {type:'ack', seq}  (also on connect, with hello: the last seq applied for the node);
//     {type:'claimed', id, ok, session, row, limits}  the answer to a node's {type:'claim', id, session, active:[ids]}:
//       may the session's first connection open (central max_sessions, store.claimSession), with
//       the session's row as stored now (null: not placed on the node) and its customer's limits
//       (read-your-writes);
//     {type:'removed'}  the node was removed from the catalogue: it cuts all and stops.
//     {type:'inspect', id, what:'connections'|'refusals', session | customer+client}  support's question,
//       answered by the node with {type:'inspected', id, connections | refusals} (node-inspect.ts).
//   node → control plane, besides reports and claims:
//     {type:'release', key, gen}  the node moves none of that customer's (or client's) bytes now
//       and gives back its grant beyond KEEP_IDLE (store.releaseGrant), in order after its reports.
//     {type:'stopping'}  a clean stop, after the node's last report: it is down at once (store.nodeStopped),
//       not NODE_UP_SECONDS after its last contact; its next report makes it up again.
//   The control plane pings every second, the payload its clock in ms (the node logs a clock more
//   than 5 s off, and reports its skew to the second: node/clock-watch.ts; the store keeps it for
//   `node list` and the doctor); the node pings every 500 ms. Either side's silence ends it.
//   A channel that ends without 'stopping' (the node crashed, or its way here broke) makes the node
//   down NODE_LOST_SECONDS later unless it was in contact meanwhile on any instance (store.nodeLost).
//
// A node may act only on sessions placed on it: counters and events of any other session are dropped.
// What it may cost (one live channel, frame size, rates, claims in flight) is bounded in node-guard.ts.
// The last applied seq per node is stored with the node (nodes.report_seq), in the transaction
// that adds the report's counters and stores its events, so no instance of the cluster counts a
// report or records its events twice, and a report resent after a crash loses none.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { ReadCounter } from './channel-silence.ts';
import { startRepairSweep } from './crash-repair.ts';
import { NodeConnection, type ChannelShared } from './node-connection.ts';
import { createNodeGuards, NODE_FRAME_LIMIT } from './node-guard.ts';
import type { NodeChannelDeps } from './node-state.ts';
import { NODE_CHANNEL_PATH } from './paths.ts';
import { RelayAudit } from './relay-audit.ts';

export { NODE_CHANNEL_PATH, NODE_WS_PATH } from './paths.ts';
export { quotaBaseKey, type NodeChannelDeps, type NodeState } from './node-state.ts';

export interface NodeChannel {
  /** Takes the upgrade when its path is the channel's; returns false otherwise. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  close(): void;
}

export function createNodeChannel(services: NodeChannelDeps): NodeChannel {
  const { data, log } = services;
  const wss = new WebSocketServer({ noServer: true, maxPayload: NODE_FRAME_LIMIT });
  const guards = createNodeGuards(log);
  const shared: ChannelShared = { services, chains: new Map(), openOf: new Map(), audit: new RelayAudit(log, services.metrics.registry), lost: new Set(), closing: false };
  const sweep = startRepairSweep(services);
  services.metrics.openConnections(() => [...shared.openOf.values()]);

  return {
    handleUpgrade(req, socket, head) {
      const path = (req.url ?? '').split('?')[0];
      if (path !== NODE_CHANNEL_PATH) return false;
      const auth = req.headers.authorization ?? '';
      const token = auth.startsWith('Bearer ') ? auth.slice(7).trim() : '';
      const refuse = (status: number, text: string) => {
        socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      };
      if (!token) {
        refuse(401, 'Unauthorized');
        return true;
      }
      if (guards.early(token)) {
        refuse(429, 'Too Many Requests'); // a node opening channels too often: not even looked up
        return true;
      }
      data.findNodeByToken(token).then(
        (node) => {
          if (!node) return refuse(401, 'Unauthorized');
          if (!guards.admit(node, token)) return refuse(429, 'Too Many Requests');
          wss.handleUpgrade(req, socket, head, (ws) => new NodeConnection(shared, ws, node, guards.attach(node, ws)).start(socket as ReadCounter));
        },
        (err: unknown) => {
          log.warn({ err: String(err) }, 'looking up a node token failed');
          refuse(503, 'Service Unavailable');
        },
      );
      return true;
    },
    close() {
      sweep.stop();
      shared.closing = true;
      for (const t of shared.lost) clearTimeout(t);
      shared.lost.clear();
      for (const ws of wss.clients) ws.terminate();
      wss.close();
    },
  };
}
