// Where the API lives (embedded or remote in the desktop app), its ports and data folder, the
// TLS mode in force and why, the theme (AppearanceCard.tsx), "Let other devices connect" (LanSharing.tsx),
// what every subscription carries (SettingsSubscriptionPage.tsx), webhooks, backups (BackupCard.tsx), and support tools:
// copy the API token, read the OpenAPI document.
import { useState, type FormEvent } from 'react';
import { humanError } from '../lib/errors.ts';
import { copyApiToken, forgetToken, loadServerInfo, openApiDocument, saveConnection, toApiError, toast, useStore } from '../store/index.ts';
import { CopyButton, ErrorBanner, Field, FormRow, Screen, Spinner } from '../components/ui.tsx';
import { formatDateTime } from '../lib/format.ts';
import type { ServerInfo } from '../../../common/api-types.ts';
import { LanSharingCard } from './LanSharing.tsx';
import { WebhooksCard } from './WebhooksCard.tsx';
import { DoctorCard } from './DoctorCard.tsx';
import { BackupCard } from './BackupCard.tsx';
import { AppearanceCard } from './AppearanceCard.tsx';
import { SubscriptionPageCard } from './SettingsSubscriptionPage.tsx';
import { selectConnection, selectPlatformKind, selectServerInfo } from '../store/selectors.ts';

const CERT_SOURCE = {
  files: 'Certificate files (--tls-cert / --tls-key), reloaded when they change',
  acme: 'ACME (a certificate authority such as Let\u2019s Encrypt)',
  'self-signed': 'Self-signed, made for this host; links pin it (pcs)',
} as const;

/** The TLS mode in force and why, from server-info's tls_status (older servers: on/off only). */
function TlsFields({ info }: { info: ServerInfo }) {
  const t = info.tls_status;
  if (!t) return <Field label="TLS" value={info.tls ? 'on' : 'off'} />;
  return (
    <>
      <Field label="TLS" value={<span data-testid="tls-mode">{`${t.enabled ? 'On' : 'Off'} (mode ${t.mode})`}</span>} />
      <Field label="Why" value={<span data-testid="tls-reason">{t.reason}</span>} />
      {t.source ? <Field label="Certificate" value={CERT_SOURCE[t.source]} /> : null}
      {t.fingerprint_sha256 ? <Field label="SHA-256 fingerprint" value={<span className="wrap">{t.fingerprint_sha256}</span>} mono /> : null}
      {t.not_after ? <Field label="Valid until" value={formatDateTime(t.not_after)} /> : null}
      {t.names.length ? <Field label="Names" value={t.names.join(', ')} mono /> : null}
    </>
  );
}

function OpenApiViewer() {
  const [doc, setDoc] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const open = async () => {
    setBusy(true);
    try {
      const d = await openApiDocument();
      setDoc(JSON.stringify(d, null, 2));
    } catch (e) {
      toast(humanError(toApiError(e)), 'error');
    } finally {
      setBusy(false);
    }
  };
  const download = () => {
    if (!doc) return;
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([doc], { type: 'application/json' }));
    a.download = 'openapi.json';
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  };
  return (
    <div>
      <div className="actions">
        <button type="button" className="btn" onClick={() => void open()} disabled={busy}>
          {busy ? 'Loading…' : 'Open the OpenAPI document'}
        </button>
        {doc ? (
          <button type="button" className="btn" onClick={download}>
            Download openapi.json
          </button>
        ) : null}
      </div>
      {doc ? <pre className="code-block" tabIndex={0} role="region" aria-label="OpenAPI document">{doc}</pre> : null}
    </div>
  );
}

/** An http URL to a machine other than this one: the token would cross the network unencrypted. */
function plainHttpBeyondLoopback(url: string): boolean {
  try {
    const u = new URL(url);
    const h = u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    return u.protocol === 'http:' && !(h === 'localhost' || h.endsWith('.localhost') || h.startsWith('127.') || h === '::1');
  } catch {
    return false;
  }
}

type RemoteProps = {
  url: string;
  setUrl: (v: string) => void;
  token: string;
  setToken: (v: string) => void;
  plainHttp: boolean;
  setPlainHttp: (v: boolean) => void;
  hasToken: boolean;
};

/** The remote server's base URL and token, and the warning (to confirm) for plain http beyond this machine. */
function RemoteFields({ url, setUrl, token, setToken, plainHttp, setPlainHttp, hasToken }: RemoteProps) {
  return (
    <>
      <FormRow label="Base URL" htmlFor="remote-url">
        <input id="remote-url" value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://vpn.example.com/v2" />
      </FormRow>
      <FormRow label="API token" htmlFor="remote-token">
        <input id="remote-token" type="password" value={token} onChange={(e) => setToken(e.target.value)} placeholder={hasToken ? 'Unchanged' : 'Token from your operator'} autoComplete="off" />
        <p className="help">Kept encrypted by the desktop app; this window never reads it back. A changed base URL needs its token again.</p>
      </FormRow>
      {plainHttpBeyondLoopback(url) ? (
        <div className="error-banner" role="note" style={{ flexDirection: 'column', alignItems: 'flex-start' }}>
          <p>
            <strong>Plain http:</strong> the API token and every answer are sent unencrypted to this server, readable by anyone on the
            network between. Use https unless this is a network you trust.
          </p>
          <label className="checkbox">
            <input type="checkbox" checked={plainHttp} onChange={(e) => setPlainHttp(e.target.checked)} />
            Use plain http anyway (token sent unencrypted)
          </label>
        </div>
      ) : null}
    </>
  );
}

export function EndpointForm() {
  const conn = useStore(selectConnection);
  const [mode, setMode] = useState<'embedded' | 'remote'>(conn?.mode === 'remote' ? 'remote' : 'embedded');
  const [url, setUrl] = useState(conn?.mode === 'remote' ? conn.baseUrl : '');
  const [token, setToken] = useState('');
  const [plainHttp, setPlainHttp] = useState(false);
  const [err, setErr] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (busy) return;
    setErr('');
    if (mode === 'remote') {
      try {
        const u = new URL(url);
        if (!/^https?:$/.test(u.protocol)) throw new Error();
      } catch {
        setErr('Enter the base URL of the API, e.g. https://vpn.example.com/v2');
        return;
      }
    }
    setBusy(true);
    try {
      const refused = await saveConnection({ mode, remoteBaseUrl: mode === 'remote' ? url : undefined, remoteToken: token || undefined, allowPlainHttp: plainHttp || undefined });
      // Main's refusal (a changed URL without its token, plain http not confirmed) stays on the form.
      if (refused) setErr(refused);
    } finally {
      setBusy(false);
    }
    setToken('');
  };
  return (
    <form className="form" onSubmit={submit}>
      <fieldset>
        <legend>Endpoint</legend>
        <label className="radio">
          <input type="radio" name="mode" value="embedded" checked={mode === 'embedded'} onChange={() => setMode('embedded')} />
          Embedded server on this computer
        </label>
        <label className="radio">
          <input type="radio" name="mode" value="remote" checked={mode === 'remote'} onChange={() => setMode('remote')} />
          Remote server
        </label>
      </fieldset>
      {mode === 'remote' ? <RemoteFields url={url} setUrl={setUrl} token={token} setToken={setToken} plainHttp={plainHttp} setPlainHttp={setPlainHttp} hasToken={!!conn?.hasToken} /> : null}
      <ErrorBanner error={err} />
      <div className="actions">
        <button type="submit" className="btn btn-primary" disabled={busy}>
          Save endpoint
        </button>
        {busy ? <Spinner label="Connecting…" /> : null}
      </div>
    </form>
  );
}

export function SettingsScreen() {
  const conn = useStore(selectConnection);
  const info = useStore(selectServerInfo);
  const kind = useStore(selectPlatformKind);
  return (
    <Screen name="settings" title="Settings">
      <div className="grid2">
        <div className="card">
          <h2>Connection</h2>
          <dl className="kvs">
            <Field label="Mode" value={conn?.mode === 'web' ? 'Web (this browser talks to the server directly)' : conn?.mode === 'remote' ? 'Remote server' : 'Embedded server'} />
            <Field label="API base URL" value={conn?.baseUrl ?? '—'} mono />
            {conn?.dataDir ? <Field label="Data folder" value={conn.dataDir} mono /> : null}
            {conn?.tokenStorage ? <Field label="Token storage" value={conn.tokenStorage} /> : null}
            {info?.token ? <Field label="Signed in as" value={`${info.token.customer} (${info.token.role})`} /> : null}
          </dl>
          {kind === 'electron' ? <EndpointForm /> : null}
          {kind === 'web' ? (
            <div className="actions">
              <button type="button" className="btn" onClick={forgetToken}>
                Use another token
              </button>
            </div>
          ) : null}
        </div>
        <div className="card">
          <h2>Server</h2>
          {info ? (
            <dl className="kvs">
              <Field label="Version" value={info.version} />
              <Field label="Public host" value={info.public_host} mono />
              <Field label="API port" value={info.api_port} mono />
              <Field label="VLESS WebSocket path" value={info.ws_path} mono />
              <Field label="VLESS TCP port" value={info.vless_tcp_port ?? 'disabled'} mono />
              <Field label="Proxy port" value={info.proxy_port ?? 'disabled'} mono />
              <TlsFields info={info} />
            </dl>
          ) : (
            <button type="button" className="btn" onClick={() => void loadServerInfo()}>
              Load server information
            </button>
          )}
        </div>
      </div>
      <AppearanceCard />
      <LanSharingCard />
      <SubscriptionPageCard />
      <WebhooksCard />
      <DoctorCard />
      <BackupCard />
      <div className="card" role="region" aria-labelledby="support-title">
        <h2 id="support-title">Support</h2>
        <p className="muted">Support staff may need the API token to call the API directly. Treat it like a password.</p>
        <div className="actions">
          <CopyButton label="Copy API token" getText={copyApiToken} />
        </div>
        <OpenApiViewer />
      </div>
    </Screen>
  );
}
