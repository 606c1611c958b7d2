// A client's standing and the changes made to it as a whole: status, usage against the cap in
// force, the current period, sessions, last seen; its expiry (set or clear); Disable or Enable
// (disabling cuts its live connections, so it asks first) and Reset usage (asks first).
import { useEffect, useState } from 'react';
import type { Client } from '../../../common/client-types.ts';
import { formatBytes, formatDateTime } from '../lib/format.ts';
import { clientBadges, clientUsage, lastSeenWords } from '../lib/standing.ts';
import { loadClient, resetClientUsage, updateClient, useStore } from '../store/index.ts';
import { selectClient, selectClientError, selectClientPending, selectClientsLoad } from '../store/selectors.ts';
import { ErrorBanner, Field, FormRow, Spinner } from '../components/ui.tsx';
import { Badges, UsageBar } from '../components/standing.tsx';

type Asking = null | 'disable' | 'reset';

/** A question before a change that cannot be taken back quietly (Escape answers no). */
function Confirm({ id, title, text, action, danger, onYes, onNo, pending }: { id: string; title: string; text: string; action: string; danger?: boolean; onYes: () => void; onNo: () => void; pending: boolean }) {
  return (
    <div className="confirm" role="alertdialog" aria-labelledby={`${id}-q`} aria-describedby={`${id}-d`} onKeyDown={(e) => e.key === 'Escape' && onNo()}>
      <p id={`${id}-q`} className="confirm-title">
        {title}
      </p>
      <p id={`${id}-d`}>{text}</p>
      <div className="actions">
        <button type="button" className={danger ? 'btn btn-danger' : 'btn btn-primary'} disabled={pending} autoFocus onClick={onYes}>
          {action}
        </button>
        <button type="button" className="btn" onClick={onNo}>
          Cancel
        </button>
      </div>
    </div>
  );
}

/** `datetime-local` text (local time) of an ISO time, and back. */
const toLocalInput = (iso: string | null) => {
  if (!iso) return '';
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

function ExpiryRow({ c, pending }: { c: Client; pending: boolean }) {
  const [text, setText] = useState(toLocalInput(c.expires_at));
  useEffect(() => setText(toLocalInput(c.expires_at)), [c.expires_at]);
  const when = text ? new Date(text) : null;
  const bad = !!when && Number.isNaN(when.getTime());
  return (
    <FormRow label="Expires" htmlFor="client-expiry">
      <div className="inline-form">
        <input id="client-expiry" type="datetime-local" value={text} aria-describedby="client-expiry-help" aria-invalid={bad} onChange={(e) => setText(e.target.value)} />
        <button type="button" className="btn" disabled={pending || !when || bad} onClick={() => void updateClient(c.client_id, { expires_at: when!.toISOString() })}>
          Set expiry
        </button>
        <button type="button" className="btn" disabled={pending || !c.expires_at} onClick={() => void updateClient(c.client_id, { expires_at: null })}>
          Clear expiry
        </button>
      </div>
      <p id="client-expiry-help" className="help">
        {c.expires_at ? `Every session of ${c.client_id} is refused from ${formatDateTime(c.expires_at)} (local time).` : `${c.client_id} never expires. Set a time to refuse all of its sessions from then on.`}
      </p>
    </FormRow>
  );
}

function Standing({ c, now }: { c: Client; now: number }) {
  return (
    <dl className="kvs">
      <Field label="Status" value={<span data-testid="client-status"><Badges badges={clientBadges(c, now)} /></span>} />
      <Field label="Usage" value={<UsageBar usage={clientUsage(c)} label={`Usage of ${c.client_id} against its byte cap`} />} />
      {c.period ? <Field label="Period" value={`${formatDateTime(c.period.start)} – ${c.period.end ? formatDateTime(c.period.end) : 'rolling'} · ↑ ${formatBytes(c.period.uploaded_bytes)} · ↓ ${formatBytes(c.period.downloaded_bytes)}`} /> : null}
      <Field label="All time" value={`↑ ${formatBytes(c.uploaded_bytes)} · ↓ ${formatBytes(c.downloaded_bytes)}`} />
      <Field label="Sessions" value={c.sessions} />
      <Field label="Last seen" value={lastSeenWords(c.last_seen, c.status === 'active', now)} />
    </dl>
  );
}

export function ClientStandingCard({ clientId }: { clientId: string }) {
  const c = useStore(selectClient(clientId));
  const pending = useStore(selectClientPending(clientId));
  const error = useStore(selectClientError(clientId));
  const load = useStore(selectClientsLoad);
  const [asking, setAsking] = useState<Asking>(null);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    void loadClient(clientId);
    const t = setInterval(() => {
      setNow(Date.now());
      void loadClient(clientId);
    }, 5000);
    return () => clearInterval(t);
  }, [clientId]);
  if (load === 'unsupported') return null;
  if (!c) return <div className="card">{error ? <ErrorBanner error={error} onRetry={() => void loadClient(clientId)} /> : <Spinner label="Loading the client…" />}</div>;
  const answer = (p: Promise<boolean>) => void p.then((ok) => ok && setAsking(null));
  return (
    <div className="card standing">
      <h2>Standing</h2>
      <Standing c={c} now={now} />
      <ExpiryRow c={c} pending={pending} />
      <ErrorBanner error={error} />
      {asking === 'disable' ? (
        <Confirm id="disable" title={`Disable ${clientId}?`} text={`Its live connections are cut at once and every session of ${clientId} is refused until you enable it again.`} action="Disable now" danger pending={pending} onYes={() => answer(updateClient(clientId, { disabled: true }))} onNo={() => setAsking(null)} />
      ) : asking === 'reset' ? (
        <Confirm id="reset" title={`Reset ${clientId}'s usage?`} text="Its byte counts start over from zero: a reached byte cap lets it connect again. The usage history stays." action="Reset usage" danger pending={pending} onYes={() => answer(resetClientUsage(clientId))} onNo={() => setAsking(null)} />
      ) : (
        <div className="actions">
          {c.disabled ? (
            <button type="button" className="btn btn-primary" disabled={pending} onClick={() => void updateClient(clientId, { disabled: false })}>
              Enable
            </button>
          ) : (
            <button type="button" className="btn btn-danger" disabled={pending} onClick={() => setAsking('disable')}>
              Disable
            </button>
          )}
          <button type="button" className="btn" disabled={pending} onClick={() => setAsking('reset')}>
            Reset usage
          </button>
        </div>
      )}
    </div>
  );
}
