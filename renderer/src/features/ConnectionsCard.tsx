// A session's open connections, live: transport, client address, node, destination (host and
// port), bytes and speed each way, age. Read again on each event of the session's stream and
// every 2 s while the window is visible (GET /v2/sessions/{id}/connections).
import { useEffect, useState } from 'react';
import type { ApiErrorInfo } from '../../../common/result.ts';
import type { ConnectionList } from '../../../common/api-types.ts';
import { formatBytes, formatDuration, formatSpeed } from '../lib/format.ts';
import { sessionConnections, toApiError, useStore } from '../store/index.ts';
import { selectNewestEventId } from '../store/selectors.ts';
import { EmptyState, ErrorBanner } from '../components/ui.tsx';
import { UnansweredNotice } from '../components/notices.tsx';

const TRANSPORT: Record<string, string> = { ws: 'VLESS ws', tcp: 'VLESS tcp', tls: 'VLESS tls', proxy_connect: 'Proxy tunnel', proxy_request: 'Proxy request', socks5: 'SOCKS5' };
const REFRESH_MS = 2000;

/** Calls `read` now, on every new event of the session, and every `ms` while the page is visible. */
export function useLiveRead(id: string, ms: number, read: () => void): void {
  const newest = useStore(selectNewestEventId(id));
  useEffect(() => {
    read();
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') read();
    }, ms);
    return () => clearInterval(timer);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [id, newest, ms]);
}

const hostPort = (d: { host: string; port: number }) => (d.host.includes(':') ? `[${d.host}]:${d.port}` : `${d.host}:${d.port}`);

export function ConnectionsCard({ id }: { id: string }) {
  const [list, setList] = useState<ConnectionList | null>(null);
  const [error, setError] = useState<ApiErrorInfo | null>(null);
  const [now, setNow] = useState(Date.now());
  useLiveRead(id, REFRESH_MS, () => {
    sessionConnections(id).then(
      (l) => {
        setList(l);
        setError(null);
        setNow(Date.now());
      },
      (e) => setError(toApiError(e)),
    );
  });
  const conns = list?.connections ?? [];
  return (
    <div className="card" data-testid="connections-card">
      <h2>Connections{list ? ` (${conns.length})` : ''}</h2>
      <ErrorBanner error={error} />
      {list && conns.length === 0 ? <EmptyState title="No open connections" /> : null}
      {conns.length ? (
        <ul className="support-list" aria-label="Open connections">
          {conns.map((c) => (
            <li key={`${c.node}/${c.id}`} data-testid="connection">
              <div className="support-line">
                <span className="badge">{TRANSPORT[c.transport] ?? c.transport}</span>{' '}
                <span className="mono">{c.client_address}</span> → <span className="mono" data-testid="connection-destination">{hostPort(c.destination)}</span>
              </div>
              <div className="muted support-line">
                node {c.node} · ↑ {formatBytes(c.uploaded_bytes)} ({formatSpeed(c.upload_speed)}) · ↓{' '}
                <span data-testid="connection-down" data-value={c.downloaded_bytes}>{formatBytes(c.downloaded_bytes)}</span> ({formatSpeed(c.download_speed)}) · open{' '}
                {formatDuration(Math.max(0, (now - Date.parse(c.opened_at)) / 1000))}
              </div>
            </li>
          ))}
        </ul>
      ) : null}
      {list ? <UnansweredNotice nodes={list.unanswered_nodes} instances={list.unanswered_instances} what="connections" /> : null}
    </div>
  );
}
