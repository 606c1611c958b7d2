// One client: its standing (status, usage against the cap, expiry, Disable/Enable, Reset usage:
// ClientControls.tsx), its limits override (ClientLimits.tsx), its usage history chart (all of its sessions), its devices (ClientDevices.tsx), its subscription (the URL with a QR code, copy, one-click import links, rotate
// with a confirmation, turn off; or the empty state with "Turn on subscription") and the
// client's sessions. The subscription URL carries its own secret, so nothing here needs the
// API token (in Electron the renderer never has it).
import { useEffect, useState } from 'react';
import { formatDateTime } from '../lib/format.ts';
import { importLinks, profileName } from '../lib/import-links.ts';
import { deleteSubscription, loadSubscription, putSubscription, useStore } from '../store/index.ts';
import { routeHref } from '../store/routing.ts';
import { selectSessions, selectSubscription, selectSubscriptionPending, useClientSessionIds } from '../store/selectors.ts';
import { CopyButton, EmptyState, ErrorBanner, Screen, Spinner, StatusBadge } from '../components/ui.tsx';
import { QrImage } from '../components/Qr.tsx';
import { UsagePanel } from '../components/UsageChart.tsx';
import { QuotaNotice } from './QuotaNotice.tsx';
import { ClientStandingCard } from './ClientControls.tsx';
import { ClientLimitsCard } from './ClientLimits.tsx';
import { ClientDevicesCard } from './ClientDevices.tsx';

/** Loads the client's subscription when the id changes (and once more on demand). */
export function useSubscription(clientId: string) {
  const entry = useStore(selectSubscription(clientId));
  useEffect(() => {
    void loadSubscription(clientId);
  }, [clientId]);
  return entry;
}

function RotateConfirm({ clientId, onDone }: { clientId: string; onDone: () => void }) {
  const pending = useStore(selectSubscriptionPending(clientId));
  return (
    <div className="confirm" role="alertdialog" aria-labelledby="rotate-q" aria-describedby="rotate-d">
      <p id="rotate-q" className="confirm-title">Rotate the subscription URL?</p>
      <p id="rotate-d">The current URL stops working at once. Every device that uses it must import the new one.</p>
      <div className="actions">
        <button
          type="button"
          className="btn btn-danger"
          disabled={pending}
          autoFocus
          onClick={async () => {
            if (await putSubscription(clientId)) onDone();
          }}
        >
          Rotate now
        </button>
        <button type="button" className="btn" onClick={onDone}>
          Cancel
        </button>
      </div>
    </div>
  );
}

export function SubscriptionPanel({ clientId }: { clientId: string }) {
  const entry = useSubscription(clientId);
  const [confirming, setConfirming] = useState(false);
  if (!entry || entry.load === 'idle' || (entry.load === 'loading' && !entry.sub)) return <Spinner label="Loading the subscription…" />;
  if (entry.load === 'error')
    return (
      <>
        <p>The subscription could not be loaded.</p>
        <ErrorBanner error={entry.error} onRetry={() => void loadSubscription(clientId)} />
      </>
    );
  const sub = entry.sub;
  if (!sub)
    return (
      <>
        <EmptyState title="No subscription yet">
          <p>
            A subscription URL lets this client's VPN app fetch all of the client's sessions and keep them up to date, and shows the quota. Whoever has the URL can read
            those sessions and nothing else; you can rotate or turn it off at any time.
          </p>
          <button type="button" className="btn btn-primary" disabled={entry.pending} onClick={() => void putSubscription(clientId)}>
            Turn on subscription
          </button>
        </EmptyState>
        <ErrorBanner error={entry.error} />
      </>
    );
  const name = profileName(clientId);
  return (
    <div className="sub-grid">
      <QrImage text={sub.url} label="QR code of the subscription URL" />
      <div className="sub-info">
        <p className="help">Scan the code with the VPN app on the phone, or send the URL. The app fetches the sessions from it and updates them by itself.</p>
        <div className="link-row">
          <code className="link" data-testid="subscription-url">{sub.url}</code>
          <CopyButton text={sub.url} label="Copy subscription URL" />
        </div>
        <p className="muted small">
          On since {formatDateTime(sub.created_at)}
          {sub.rotated_at ? ` · URL changed ${formatDateTime(sub.rotated_at)}` : ''}
        </p>
        <h3>Open in an app</h3>
        <ul className="import-links" aria-label="Import into an app">
          {importLinks(sub, name).map((l) => (
            <li key={l.app}>
              <a className="btn btn-small" href={l.href} aria-label={`Import into ${l.app}`}>
                {l.app}
              </a>
              <span className="muted small">{l.platforms}</span>
            </li>
          ))}
        </ul>
        <details className="formats">
          <summary>URL for a given format</summary>
          <dl className="kvs">
            {Object.entries(sub.format_urls).map(([f, u]) => (
              <div className="kv" key={f}>
                <dt>{f}</dt>
                <dd className="mono small">{u}</dd>
              </div>
            ))}
          </dl>
        </details>
        <ErrorBanner error={entry.error} />
        {confirming ? (
          <RotateConfirm clientId={clientId} onDone={() => setConfirming(false)} />
        ) : (
          <div className="actions">
            <button type="button" className="btn" disabled={entry.pending} onClick={() => setConfirming(true)}>
              Rotate URL
            </button>
            <button type="button" className="btn btn-danger" disabled={entry.pending} onClick={() => void deleteSubscription(clientId)}>
              Turn off
            </button>
          </div>
        )}
      </div>
    </div>
  );
}

function ClientSessions({ clientId }: { clientId: string }) {
  const ids = useClientSessionIds(clientId);
  const sessions = useStore(selectSessions);
  if (ids.length === 0) return <p className="muted">No sessions of this client are loaded.</p>;
  return (
    <ul className="plain-list" aria-label={`Sessions of ${clientId}`}>
      {ids.map((id) => {
        const s = sessions[id];
        return (
          <li key={id}>
            <a href={routeHref({ name: 'session', id })} className="mono">
              {id.slice(0, 8)}
            </a>
            <span>{s.zone}</span>
            <StatusBadge status={s.status} paused={s.paused} />
          </li>
        );
      })}
    </ul>
  );
}

export function ClientScreen({ id }: { id: string }) {
  return (
    <Screen
      name="client"
      title={<>Client <span className="mono">{id}</span></>}
      head={
        <>
          <span className="grow" />
          <a className="btn" href={routeHref({ name: 'clients' })}>
            All clients
          </a>
        </>
      }
    >
      <QuotaNotice clientId={id} load={false} />
      <ClientStandingCard clientId={id} />
      <ClientLimitsCard clientId={id} />
      <UsagePanel filter={{ client_id: id }} subject={`client ${id}`} title="Usage history" />
      <div className="card">
        <h2>Subscription</h2>
        <SubscriptionPanel clientId={id} />
      </div>
      <div className="card">
        <h2>Sessions</h2>
        <ClientSessions clientId={id} />
      </div>
      <ClientDevicesCard clientId={id} />
    </Screen>
  );
}

/** On the session detail: the client's subscription in short, and the way to its client view. */
export function SubscriptionSummary({ clientId }: { clientId: string }) {
  const entry = useSubscription(clientId);
  const href = routeHref({ name: 'client', id: clientId });
  return (
    <div className="card">
      <h2>Subscription</h2>
      {!entry || entry.load === 'idle' || entry.load === 'loading' ? (
        <Spinner label="Loading the subscription…" />
      ) : entry.load === 'error' ? (
        <ErrorBanner error={entry.error} onRetry={() => void loadSubscription(clientId)} />
      ) : entry.sub ? (
        <>
          <p className="help">All of {clientId}'s sessions, in one URL that VPN apps poll.</p>
          <div className="link-row">
            <code className="link">{entry.sub.url}</code>
            <CopyButton text={entry.sub.url} label="Copy subscription URL" />
          </div>
          <a href={href}>QR code, import links and settings of {clientId}'s subscription</a>
        </>
      ) : (
        <>
          <p>No subscription yet for {clientId}.</p>
          <a href={href}>Set up a subscription for {clientId}</a>
        </>
      )}
    </div>
  );
}
