// Builds the geo-targeted proxy credential: <session-id>[-cc-XX[-city-name]], password the
// session id, with country and city pickers fed by the zone catalogue.
import { useMemo, useState } from 'react';
import { buildProxyUser } from '../../../server/contract/proxy-string.ts';
import { navigate, useStore } from '../store/index.ts';
import { selectServerInfo, selectSessionOrder, selectSessions, selectZones } from '../store/selectors.ts';
import { AnyOrOptions, CopyButton, EmptyState, FormRow, Screen } from '../components/ui.tsx';

/** The credential built: user name, password and the whole proxy URL, each to copy. */
function ProxyCredential({ user, sid, url, port }: { user: string; sid: string; url: string; port: number | null | undefined }) {
  return (
    <>
      <FormRow label="User name" controlClass="link-row">
        <code className="link" data-testid="proxy-user">{user}</code>
        <CopyButton text={user} label="Copy user name" />
      </FormRow>
      <FormRow label="Password">
        <code className="link">{sid}</code>
      </FormRow>
      <FormRow label="Proxy URL" controlClass="link-row">
        <code className="link" data-testid="proxy-url">{url || (port === null ? 'The proxy is disabled on this server.' : '…')}</code>
        {url ? <CopyButton text={url} label="Copy proxy URL" /> : null}
      </FormRow>
    </>
  );
}

export function ProxyScreen() {
  const zones = useStore(selectZones);
  const info = useStore(selectServerInfo);
  const sessions = useStore(selectSessions);
  const order = useStore(selectSessionOrder);
  const usable = useMemo(() => order.slice(0, 2000).map((id) => sessions[id]).filter((s) => s && s.status !== 'ended'), [order, sessions]);
  const [sessionId, setSessionId] = useState('');
  const [country, setCountry] = useState('');
  const [city, setCity] = useState('');
  const sid = sessionId || usable[0]?.id || '';

  const countries = useMemo(() => [...new Set(zones.map((z) => z.country))].sort(), [zones]);
  const cities = useMemo(() => [...new Set(zones.filter((z) => z.country === country).flatMap((z) => z.cities))].sort(), [zones, country]);

  let user = '';
  let error = '';
  try {
    user = sid ? buildProxyUser(sid, { country: country || undefined, city: city || undefined }) : '';
  } catch (e) {
    error = e instanceof Error ? e.message : String(e);
  }
  const host = info?.public_host ?? location.hostname;
  const port = info?.proxy_port;
  const url = user && port ? `http://${encodeURIComponent(user)}:${encodeURIComponent(sid)}@${host}:${port}` : '';

  return (
    <Screen name="proxy" title="Proxy">
      <p className="muted">
        The HTTP proxy (CONNECT and plain requests) counts traffic on a session, like VLESS. The user name carries the geographic target; a country or city outside the catalogue is refused with 412.
      </p>
      {!usable.length ? (
        <EmptyState title="No usable session">
          <p>The proxy credential is tied to a session. Create one first.</p>
          <button type="button" className="btn btn-primary" onClick={() => navigate({ name: 'new' })}>
            Create a session
          </button>
        </EmptyState>
      ) : (
        <div className="card form">
          <FormRow label="Credential session" htmlFor="proxy-session">
            <select id="proxy-session" value={sid} onChange={(e) => setSessionId(e.target.value)}>
              {usable.map((s) => (
                <option key={s.id} value={s.id}>
                  {`${s.client_id} · ${s.zone} · ${s.id.slice(0, 8)}`}
                </option>
              ))}
            </select>
          </FormRow>
          <FormRow label="Country" htmlFor="proxy-country">
            <select
              id="proxy-country"
              value={country}
              onChange={(e) => {
                setCountry(e.target.value);
                setCity('');
              }}
            >
              <AnyOrOptions any="Any country" values={countries} />
            </select>
          </FormRow>
          <FormRow label="City" htmlFor="proxy-city">
            <select id="proxy-city" value={city} onChange={(e) => setCity(e.target.value)} disabled={!country}>
              <AnyOrOptions any="Any city" values={cities} />
            </select>
          </FormRow>
          {error ? (
            <div className="error-banner" role="alert">
              {error}
            </div>
          ) : null}
          <ProxyCredential user={user} sid={sid} url={url} port={port} />
        </div>
      )}
    </Screen>
  );
}
