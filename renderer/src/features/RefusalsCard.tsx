// Why the session's connections were refused lately: each refusal in words with what fixes it
// and a link to where (the limits screen, the client's sessions), and the counts per reason over
// the last hour (GET /v2/sessions/{id}/refusals). Read again on the session's events and every 5 s.
import { useEffect, useState } from 'react';
import type { ApiErrorInfo } from '../../../common/result.ts';
import type { RefusalList } from '../../../common/api-types.ts';
import { formatDateTime } from '../lib/format.ts';
import { refusalWords, type RefusalContext, type RefusalLink } from '../lib/refusal-words.ts';
import { loadLimits, sessionRefusals, toApiError, useStore, type SessionView } from '../store/index.ts';
import { selectLimits, selectOtherActiveSession } from '../store/selectors.ts';
import { routeHref } from '../store/routing.ts';
import { EmptyState, ErrorBanner } from '../components/ui.tsx';
import { UnansweredNotice } from '../components/notices.tsx';
import { useLiveRead } from './ConnectionsCard.tsx';

const REFRESH_MS = 5000;

function LinkTo({ link, clientId }: { link: RefusalLink; clientId: string }) {
  const href =
    link.kind === 'limits' ? routeHref({ name: 'limits', scope: link.scope }) : link.kind === 'session' ? routeHref({ name: 'session', id: link.id }) : routeHref({ name: 'client', id: clientId });
  return <a href={href}>{link.label}</a>;
}

export function RefusalsCard({ s }: { s: SessionView }) {
  const [list, setList] = useState<RefusalList | null>(null);
  const [error, setError] = useState<ApiErrorInfo | null>(null);
  const clientLimits = useStore(selectLimits('client'));
  const otherActive = useStore(selectOtherActiveSession(s.id, s.client_id));
  useEffect(() => {
    if (clientLimits.load === 'idle') void loadLimits('client').catch(() => {});
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  useLiveRead(s.id, REFRESH_MS, () => {
    sessionRefusals(s.id).then(
      (l) => {
        setList(l);
        setError(null);
      },
      (e) => setError(toApiError(e)),
    );
  });
  const ctx: RefusalContext = {
    clientId: s.client_id,
    quotaUntil: s.over_quota_until,
    maxSessions: clientLimits.record?.max_sessions,
    maxReconnections: clientLimits.record?.max_reconnections,
    clientPeriod: clientLimits.record?.reset_period,
    otherActive,
  };
  const counts = Object.entries(list?.counts_last_hour ?? {}).sort((a, b) => b[1] - a[1]);
  return (
    <div className="card" data-testid="refusals-card">
      <h2>Refusals</h2>
      <ErrorBanner error={error} />
      {list && list.refusals.length === 0 ? <EmptyState title="No refused connections">Connections refused in the last while are listed here with why.</EmptyState> : null}
      {counts.length ? (
        <p className="support-counts" data-testid="refusal-counts">
          Last hour:{' '}
          {counts.map(([reason, n], i) => (
            <span key={reason}>
              {i ? ', ' : ''}
              {refusalWords(reason, ctx).what} × {n}
            </span>
          ))}
        </p>
      ) : null}
      {list?.refusals.length ? (
        <ul className="support-list" aria-label="Refused connections">
          {list.refusals.slice(0, 20).map((r, i) => {
            const w = refusalWords(r.reason, ctx);
            return (
              <li key={`${r.at}/${i}`} data-testid="refusal" data-reason={r.reason}>
                <div className="support-line">
                  <strong>{w.what}</strong>: {w.fix} {w.link ? <LinkTo link={w.link} clientId={s.client_id} /> : null}
                </div>
                <div className="muted support-line">
                  {formatDateTime(r.at)} · {r.transport} from <span className="mono">{r.client_address}</span> · node {r.node} · <span className="mono">{r.reason}</span>
                </div>
              </li>
            );
          })}
        </ul>
      ) : null}
      {list ? <UnansweredNotice nodes={list.unanswered_nodes} instances={list.unanswered_instances} what="refusals" /> : null}
    </div>
  );
}
