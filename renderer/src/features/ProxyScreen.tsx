// Builds the proxy credential: the user name `<session-id>[-cc-XX[-city-name]][-sessid-KEY
// [-sesstime-MIN][-strict]]` (written by the shared buildProxyUser, never by hand), the session
// id as password, with country and city from the zone catalogue, a sticky session (a generated
// key, Regenerate, its lifetime in minutes, strict), and the protocol (HTTP, or SOCKS5 on the
// same port with the same credentials); then the proxy URL and a ready curl line for each
// protocol, each to copy.
import { useMemo, useState } from 'react';
import { buildProxyUser, SESSTIME_MAX } from '../../../server/contract/proxy-string.ts';
import { navigate, useStore } from '../store/index.ts';
import { selectServerInfo, selectSessionOrder, selectSessions, selectZones } from '../store/selectors.ts';
import { AnyOrOptions, CopyButton, EmptyState, ErrorBanner, FormRow, Screen } from '../components/ui.tsx';

type Protocol = 'http' | 'socks5';
const KEY_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** A random sticky-session key: 12 letters or digits. */
export function newSessionKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return Array.from(bytes, (b) => KEY_CHARS[b % KEY_CHARS.length]).join('');
}

interface Sticky {
  on: boolean;
  key: string;
  minutes: string;
  strict: boolean;
}

/** The sticky session: on/off, its key (Regenerate), its lifetime in minutes, strict. */
function StickyFields({ sticky, set }: { sticky: Sticky; set: (s: Sticky) => void }) {
  return (
    <fieldset className="choice" aria-describedby="sticky-help">
      <legend>Sticky session</legend>
      <label className="radio">
        <input type="checkbox" checked={sticky.on} onChange={(e) => set({ ...sticky, on: e.target.checked })} />
        <span>Keep the same exit</span>
      </label>
      {sticky.on ? (
        <>
          <FormRow label="Session key" controlClass="link-row">
            <code className="link" data-testid="proxy-sessid">{sticky.key}</code>
            <button type="button" className="btn" onClick={() => set({ ...sticky, key: newSessionKey() })} aria-label="Regenerate the session key">
              Regenerate
            </button>
          </FormRow>
          <FormRow label="Lifetime (minutes)" htmlFor="proxy-sesstime">
            <input id="proxy-sesstime" type="number" inputMode="numeric" min={1} max={SESSTIME_MAX} value={sticky.minutes} onChange={(e) => set({ ...sticky, minutes: e.target.value })} />
          </FormRow>
          <label className="radio">
            <input type="checkbox" checked={sticky.strict} onChange={(e) => set({ ...sticky, strict: e.target.checked })} />
            <span>Strict: fail rather than move to another exit</span>
          </label>
        </>
      ) : null}
      <p id="sticky-help" className="help">
        Connections naming the same key leave through the same exit for the lifetime (1 to {SESSTIME_MAX} minutes; the server's default is 10). Strict refuses the connection when that exit has gone.
      </p>
    </fieldset>
  );
}

function ProtocolChoice({ protocol, set }: { protocol: Protocol; set: (p: Protocol) => void }) {
  return (
    <fieldset className="choice">
      <legend>Protocol</legend>
      <label className="radio">
        <input type="radio" name="proxy-protocol" checked={protocol === 'http'} onChange={() => set('http')} />
        <span>HTTP</span>
      </label>
      <label className="radio">
        <input type="radio" name="proxy-protocol" checked={protocol === 'socks5'} onChange={() => set('socks5')} />
        <span>SOCKS5</span>
      </label>
    </fieldset>
  );
}

/** A line to copy: the text and its Copy button. */
function CopyRow({ label, copy, text, testId }: { label: string; copy: string; text: string; testId: string }) {
  return (
    <FormRow label={label} controlClass="link-row">
      <code className="link" data-testid={testId}>{text}</code>
      <CopyButton text={text} label={copy} />
    </FormRow>
  );
}

/** The credential built: user name, password, the proxy URL of the protocol, and a curl line for each protocol. */
function ProxyCredential({ user, sid, hostPort, protocol }: { user: string; sid: string; hostPort: string | null; protocol: Protocol }) {
  const auth = `${encodeURIComponent(user)}:${encodeURIComponent(sid)}`;
  return (
    <>
      <CopyRow label="User name" copy="Copy user name" text={user} testId="proxy-user" />
      <CopyRow label="Password" copy="Copy password" text={sid} testId="proxy-password" />
      {hostPort ? (
        <>
          <CopyRow label="Proxy URL" copy="Copy proxy URL" text={`${protocol === 'http' ? 'http' : 'socks5h'}://${auth}@${hostPort}`} testId="proxy-url" />
          <CopyRow label="curl (HTTP)" copy="Copy the curl command for HTTP" text={`curl -x http://${auth}@${hostPort} https://example.com`} testId="proxy-curl-http" />
          <CopyRow label="curl (SOCKS5)" copy="Copy the curl command for SOCKS5" text={`curl --socks5-hostname ${hostPort} --proxy-user ${user}:${sid} https://example.com`} testId="proxy-curl-socks5" />
        </>
      ) : (
        <FormRow label="Proxy URL">
          <code className="link" data-testid="proxy-url">{hostPort === null ? 'The proxy is disabled on this server.' : '…'}</code>
        </FormRow>
      )}
    </>
  );
}

/** The user name for the choices, or why it cannot be built (buildProxyUser's words). */
function userFor(sid: string, country: string, city: string, sticky: Sticky): { user: string; error: string } {
  try {
    const minutes = sticky.minutes.trim() === '' ? undefined : Number(sticky.minutes);
    const target = { country: country || undefined, city: city || undefined, ...(sticky.on ? { sessid: sticky.key, sesstime: minutes, strict: sticky.strict || undefined } : {}) };
    return { user: sid ? buildProxyUser(sid, target) : '', error: '' };
  } catch (e) {
    return { user: '', error: e instanceof Error ? e.message : String(e) };
  }
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
  const [sticky, setSticky] = useState<Sticky>(() => ({ on: false, key: newSessionKey(), minutes: '10', strict: false }));
  const [protocol, setProtocol] = useState<Protocol>('http');
  const sid = sessionId || usable[0]?.id || '';

  const countries = useMemo(() => [...new Set(zones.map((z) => z.country))].sort(), [zones]);
  const cities = useMemo(() => [...new Set(zones.filter((z) => z.country === country).flatMap((z) => z.cities))].sort(), [zones, country]);
  const { user, error } = userFor(sid, country, city, sticky);
  const host = info?.public_host ?? location.hostname;
  const port = info?.proxy_port;
  const hostPort = port === null ? null : port ? `${host.includes(':') ? `[${host}]` : host}:${port}` : '';

  return (
    <Screen name="proxy" title="Proxy">
      <p className="muted">
        The proxy speaks HTTP (CONNECT and plain requests) and SOCKS5 on one port, with the same credentials, and counts traffic on a session, like VLESS. The user name carries the geographic target and the sticky session; a country or city outside the catalogue is refused with 412.
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
          <StickyFields sticky={sticky} set={setSticky} />
          <ProtocolChoice protocol={protocol} set={setProtocol} />
          <ErrorBanner error={error} />
          {user ? <ProxyCredential user={user} sid={sid} hostPort={hostPort} protocol={protocol} /> : null}
        </div>
      )}
    </Screen>
  );
}
