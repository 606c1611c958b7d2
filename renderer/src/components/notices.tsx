// The connection's two notices: a rate limit (the server's Retry-After counted down; not an
// outage, so nothing is hidden) and an outage once connected (the last data stays on screen,
// marked with the time of the server's last answer, while the window asks it again).
import { useEffect, useState } from 'react';
import { endRateLimit, probeServer, useStore } from '../store/index.ts';
import { selectRateLimitedUntil, selectStaleSince } from '../store/selectors.ts';

/** How often the window asks a server that stopped answering. */
const PROBE_MS = 3000;

function secondsLeft(until: number): number {
  return Math.max(0, Math.ceil((until - Date.now()) / 1000));
}

export function RateLimitNotice() {
  const until = useStore(selectRateLimitedUntil);
  const [left, setLeft] = useState(() => (until ? secondsLeft(until) : 0));
  useEffect(() => {
    if (!until) return;
    setLeft(secondsLeft(until));
    const t = setInterval(() => {
      const s = secondsLeft(until);
      setLeft(s);
      if (s === 0) endRateLimit();
    }, 250);
    return () => clearInterval(t);
  }, [until]);
  if (!until) return null;
  return (
    <div className="notice notice-warn" role="status" data-testid="rate-limit">
      <strong>Rate limited.</strong> The server is busy with this token's requests and asked to wait: ready again in{' '}
      <span data-testid="rate-limit-seconds">{left}</span> s. Nothing is lost; the data on screen stays.
    </div>
  );
}

export function StaleBanner() {
  const since = useStore(selectStaleSince);
  useEffect(() => {
    if (!since) return;
    const t = setInterval(() => void probeServer(), PROBE_MS);
    return () => clearInterval(t);
  }, [since]);
  if (!since) return null;
  return (
    <div className="notice notice-stale" role="status" data-testid="stale-banner">
      <strong>Showing data from {new Date(since).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}</strong> — the server is not answering; reconnecting…
    </div>
  );
}

/** A support list read from every node and server instance: names those that did not answer, so
 *  a short list is never taken for the whole ("connections", "refusals"). */
export function UnansweredNotice({ nodes, instances, what }: { nodes: string[]; instances?: string[]; what: string }) {
  const many = nodes.length > 1;
  return (
    <>
      {nodes.length ? (
        <p className="help" data-testid="unanswered-nodes">
          No answer from {many ? 'the nodes' : 'the node'} {nodes.join(', ')}: {many ? 'their' : 'its'} {what} are not listed.
        </p>
      ) : null}
      {instances?.length ? (
        <p className="help" data-testid="unanswered-instances">
          No answer from the server {instances.length > 1 ? 'instances' : 'instance'} {instances.join(', ')}: the {what} of{' '}
          {instances.length > 1 ? 'their' : 'its'} data plane and nodes are not listed.
        </p>
      ) : null}
    </>
  );
}
