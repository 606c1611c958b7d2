// What the window shows before the app is connected: the token prompt (web mode), the desktop
// app's token gate, the "server unreachable" screen, a rate limit met while connecting, and the
// question a `#token=` link asks over any of them.
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { humanError } from '../lib/errors.ts';
import { resolveLinkToken, startApp, submitToken, useStore } from '../store/index.ts';
import { selectBaseUrl, selectLinkToken, selectPhase, selectPhaseError, selectPlatformKind, selectRateLimitedUntil, selectTokenProblem, useSignedInAs } from '../store/selectors.ts';
import { ErrorBanner, Spinner } from '../components/ui.tsx';
import { RateLimitNotice } from '../components/notices.tsx';
import { EndpointForm } from './SettingsScreen.tsx';

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

/**
 * Web mode: a `#token=` link carries a token other than the stored one. Nothing is replaced
 * until the user chooses, seeing whom each token signs in as.
 */
export function LinkTokenDialog() {
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

/** The gate for the app's phase, or null once the app is connected. */
export function Gate() {
  const phase = useStore(selectPhase);
  const kind = useStore(selectPlatformKind);
  const limited = useStore(selectRateLimitedUntil);
  if (phase === 'ready') return null;
  if (limited && phase !== 'need-token')
    return (
      <main className="center">
        <div className="card gate">
          <h1>VPN Access Desk</h1>
          <RateLimitNotice />
        </div>
      </main>
    );
  if (phase === 'starting')
    return (
      <main className="center">
        <Spinner label="Connecting to the server…" />
      </main>
    );
  if (phase === 'need-token') return kind === 'electron' ? <ElectronTokenGate /> : <TokenPrompt />;
  return <Unreachable />;
}
