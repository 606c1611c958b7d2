// Warnings before a client is cut (50, 80, 100 % of a byte cap in force), worded by
// lib/quota-words.ts from the client record the clients slice holds (GET /v2/clients): on the
// client's page and the session detail (QuotaNotice, one client), and above the clients list
// (QuotaBanner, every client the list holds). Nothing is shown under 50 %.
import { useEffect } from 'react';
import { loadClient, useStore } from '../store/index.ts';
import { selectClient, selectClientOrder, selectClients } from '../store/selectors.ts';
import { quotaWarnings, type QuotaWarning } from '../lib/quota-words.ts';

const REFRESH_MS = 10_000;
const BANNER_MAX = 5;

function Warning({ w }: { w: QuotaWarning }) {
  return (
    <p className={`notice quota-notice${w.threshold === 100 ? ' quota-full' : ''}`} role="status" data-threshold={w.threshold}>
      {w.text}
    </p>
  );
}

/** One client's warnings; `load`: read the client now and every 10 s (the client's page reads it already). */
export function QuotaNotice({ clientId, load = true }: { clientId: string; load?: boolean }) {
  const c = useStore(selectClient(clientId));
  useEffect(() => {
    if (!load) return;
    void loadClient(clientId);
    const t = setInterval(() => void loadClient(clientId), REFRESH_MS);
    return () => clearInterval(t);
  }, [clientId, load]);
  const warnings = c ? quotaWarnings(c) : [];
  if (warnings.length === 0) return null;
  return (
    <div className="quota-warnings" data-testid="quota-warnings">
      {warnings.map((w) => (
        <Warning key={w.direction} w={w} />
      ))}
    </div>
  );
}

/** The warnings of every client the list holds, the fullest first (at most five, then how many more). */
export function QuotaBanner() {
  const clients = useStore(selectClients);
  const order = useStore(selectClientOrder);
  const all = order.flatMap((id) => (clients[id] ? quotaWarnings(clients[id]).map((w) => ({ id, w })) : [])).sort((a, b) => b.w.percent - a.w.percent);
  if (all.length === 0) return null;
  return (
    <div className="quota-warnings" data-testid="quota-banner" aria-label="Clients near their caps">
      {all.slice(0, BANNER_MAX).map(({ id, w }) => (
        <Warning key={`${id}:${w.direction}`} w={w} />
      ))}
      {all.length > BANNER_MAX ? <p className="muted small">and {all.length - BANNER_MAX} more near or over a cap</p> : null}
    </div>
  );
}
