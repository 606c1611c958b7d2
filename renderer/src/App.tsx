// The window: header with live totals, navigation, the current screen, and toasts.
// Before the API answers: the token prompt (web mode) or the "server unreachable" screen.
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { humanError } from './lib/errors.ts';
import { formatSpeed } from './lib/format.ts';
import { routeHref, type Route } from './store/routing.ts';
import { dismissToast, resolveLinkToken, startApp, submitToken, useStore } from './store/index.ts';
import { selectBaseUrl, selectLinkToken, selectPhase, selectPhaseError, selectPlatformKind, selectRoute, selectSignedInToken, selectStreamState, selectToasts, selectTokenProblem, useTotals } from './store/selectors.ts';
import { ErrorBanner, Spinner } from './components/ui.tsx';
import { SessionsScreen } from './features/SessionsScreen.tsx';
import { NewSessionScreen } from './features/NewSession.tsx';
import { SessionDetail } from './features/SessionDetail.tsx';
import { ClientScreen } from './features/ClientScreen.tsx';
import { LimitsScreen } from './features/LimitsScreen.tsx';
import { EventsScreen } from './features/EventsScreen.tsx';
import { ProxyScreen } from './features/ProxyScreen.tsx';
import { DashboardScreen } from './features/DashboardScreen.tsx';
import { EndpointForm, SettingsScreen } from './features/SettingsScreen.tsx';

const NAV: Array<{ label: string; route: Route; match: Route['name'][] }> = [
  { label: 'Sessions', route: { name: 'sessions' }, match: ['sessions', 'session', 'client'] },
  { label: 'New session', route: { name: 'new' }, match: ['new'] },
  { label: 'Dashboard', route: { name: 'dashboard' }, match: ['dashboard'] },
  { label: 'Limits', route: { name: 'limits', scope: 'global' }, match: ['limits'] },
  { label: 'Events', route: { name: 'events' }, match: ['events'] },
  { label: 'Proxy', route: { name: 'proxy' }, match: ['proxy'] },
  { label: 'Settings', route: { name: 'settings' }, match: ['settings'] },
];

function Screen({ route }: { route: Route }) {
  switch (route.name) {
    case 'sessions':
      return <SessionsScreen />;
    case 'new':
      return <NewSessionScreen />;
    case 'dashboard':
      return <DashboardScreen />;
    case 'session':
      return <SessionDetail id={route.id} />;
    case 'client':
      return <ClientScreen id={route.id} />;
    case 'limits':
      return <LimitsScreen scope={route.scope} />;
    case 'events':
      return <EventsScreen />;
    case 'proxy':
      return <ProxyScreen />;
    case 'settings':
      return <SettingsScreen />;
  }
}

/**
 * Electron: the token and the endpoint live in the main process, so a missing token or an
 * unreachable (remote) server is fixed in the connection settings. The gates show them,
 * since the navigation to Settings is not there before the app is connected.
 */
function ConnectionSettingsGate() {
  const kind = useStore(selectPlatformKind);
  if (kind !== 'electron') return null;
  return (
    <details className="gate-settings">
      <summary>Connection settings</summary>
      <EndpointForm />
    </details>
  );
}

function ElectronTokenGate() {
  const err = useStore(selectPhaseError);
  const problem = useStore(selectTokenProblem);
  // The stored token exists but cannot be read (keychain locked or reset): main kept the file
  // and made no new token; say so, and what to do.
  if (problem)
    return (
      <main className="center">
        <div className="card gate">
          <h1>The API token could not be read</h1>
          <p role="alert">{problem}</p>
          <EndpointForm />
        </div>
      </main>
    );
  return (
    <main className="center">
      <div className="card gate">
        <h1>VPN Access Desk</h1>
        <p>No API token is set for this server. Enter it below, or switch to the embedded server.</p>
        <ErrorBanner error={err} />
        <EndpointForm />
      </div>
    </main>
  );
}

function TokenPrompt() {
  const err = useStore(selectPhaseError);
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!token.trim()) return;
    setBusy(true);
    await submitToken(token);
    setBusy(false);
  };
  return (
    <main className="center">
      <form className="card gate" onSubmit={submit}>
        <h1>VPN Access Desk</h1>
        <p>Enter the API token for this server. It is kept in this browser only.</p>
        <label htmlFor="api-token">API token</label>
        <input id="api-token" type="password" autoComplete="off" value={token} onChange={(e) => setToken(e.target.value)} autoFocus />
        <ErrorBanner error={err} />
        <button type="submit" className="btn btn-primary" disabled={busy || !token.trim()}>
          {busy ? 'Checking…' : 'Connect'}
        </button>
        <p className="help">Create a token on the server with <code>vpn-access token create --customer default --role owner</code> (add <code>--data-dir DIR</code> or <code>--database URL</code> when the server uses one).</p>
      </form>
    </main>
  );
}

function Unreachable() {
  const err = useStore(selectPhaseError);
  const baseUrl = useStore(selectBaseUrl);
  const [seconds, setSeconds] = useState(5);
  useEffect(() => {
    // Try again by itself every 5 seconds.
    const t = setInterval(() => {
      setSeconds((s) => {
        if (s <= 1) {
          void startApp({ retry: true });
          return 5;
        }
        return s - 1;
      });
    }, 1000);
    return () => clearInterval(t);
  }, []);
  return (
    <main className="center">
      <div className="card gate">
        <h1>Server unreachable</h1>
        <p role="alert">{humanError(err) || 'The server could not be reached.'}</p>
        {baseUrl ? <p className="mono small">{baseUrl}</p> : null}
        <p className="muted">Trying again in {seconds} s…</p>
        <button type="button" className="btn btn-primary" onClick={() => void startApp()}>
          Try again now
        </button>
        <ConnectionSettingsGate />
      </div>
    </main>
  );
}

/** "customer (role)" of the token in use, from server-info, or null before it answers. */
export function useSignedInAs(): string | null {
  const token = useStore(selectSignedInToken);
  return token ? `${token.customer} (${token.role})` : null;
}

/**
 * Web mode: a `#token=` link carries a token other than the stored one. Nothing is replaced
 * until the user chooses, seeing whom each token signs in as.
 */
function LinkTokenDialog() {
  const next = useStore(selectLinkToken);
  const current = useSignedInAs();
  const keepRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (next) keepRef.current?.focus();
  }, [next]);
  if (!next) return null;
  return (
    <div className="modal-backdrop" style={{ position: 'fixed', inset: 0, background: 'rgba(0,0,0,0.45)', display: 'grid', placeItems: 'center', zIndex: 100 }}>
      <div
        className="card gate"
        role="dialog"
        aria-modal="true"
        aria-labelledby="link-token-title"
        onKeyDown={(e) => {
          if (e.key === 'Escape') void resolveLinkToken(false);
        }}
      >
        <h2 id="link-token-title">Replace the stored API token?</h2>
        <p>
          The link you opened carries an API token for <strong>{`${next.customer} (${next.role})`}</strong>.
        </p>
        <p>
          This browser is signed in as <strong>{current ?? 'another token'}</strong>. Use the new token only if you expected to work for that
          customer: a link from someone else can sign you in to their account.
        </p>
        <div className="actions">
          <button type="button" className="btn btn-primary" ref={keepRef} onClick={() => void resolveLinkToken(false)}>
            Keep the current token
          </button>
          <button type="button" className="btn" onClick={() => void resolveLinkToken(true)}>
            Use the new token
          </button>
        </div>
      </div>
    </div>
  );
}

function Header() {
  const t = useTotals();
  const stream = useStore(selectStreamState);
  const who = useSignedInAs();
  return (
    <header className="topbar">
      <span className="brand">
        <span className={`dot ${t.active ? 'dot-on' : ''}`} aria-hidden="true" />
        VPN Access Desk
      </span>
      <span className="grow" />
      {who ? (
        <span className="stat" title="The API token in use signs in as this customer (role)">
          {who}
        </span>
      ) : null}
      <span className="stat" aria-label="Active sessions">
        {t.active} active
      </span>
      <span className="stat" aria-label="Total speed">
        ↑ {formatSpeed(t.up)} · ↓ {formatSpeed(t.down)}
      </span>
      <span className={`stream stream-${stream}`} title="Event stream">
        {stream === 'open' ? 'live' : stream}
      </span>
    </header>
  );
}

function Toasts() {
  const toasts = useStore(selectToasts);
  return (
    <div className="toasts" role="status" aria-live="polite">
      {toasts.map((t) => (
        <div key={t.id} className={`toast toast-${t.kind}`}>
          <span>{t.text}</span>
          <button type="button" className="btn-icon" aria-label="Dismiss" onClick={() => dismissToast(t.id)}>
            ×
          </button>
        </div>
      ))}
    </div>
  );
}

export function App() {
  const phase = useStore(selectPhase);
  const route = useStore(selectRoute);
  const kind = useStore(selectPlatformKind);
  const mainRef = useRef<HTMLElement>(null);
  // Move focus to the new screen's heading for keyboard and screen-reader users.
  useEffect(() => {
    const h = mainRef.current?.querySelector<HTMLElement>('h1');
    if (h) {
      h.tabIndex = -1;
      h.focus({ preventScroll: true });
    }
  }, [route.name, route.name === 'session' || route.name === 'client' ? route.id : '']);

  // The link-token question stands over whatever phase the app is in.
  const gate =
    phase === 'starting' ? (
      <main className="center">
        <Spinner label="Connecting to the server…" />
      </main>
    ) : phase === 'need-token' ? (
      kind === 'electron' ? <ElectronTokenGate /> : <TokenPrompt />
    ) : phase === 'unreachable' ? (
      <Unreachable />
    ) : null;
  if (gate)
    return (
      <>
        {gate}
        <LinkTokenDialog />
      </>
    );
  return (
    <div className="shell">
      <a className="skip" href="#content">
        Skip to content
      </a>
      <Header />
      <nav className="sidenav" aria-label="Main">
        <ul>
          {NAV.map((n) => (
            <li key={n.label}>
              <a href={routeHref(n.route)} aria-current={n.match.includes(route.name) ? 'page' : undefined}>
                {n.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="content" ref={mainRef} className="content" tabIndex={-1}>
        <Screen route={route} />
      </main>
      <Toasts />
      <LinkTokenDialog />
    </div>
  );
}
