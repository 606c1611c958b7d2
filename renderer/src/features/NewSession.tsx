// Create a session: zone (zones without active nodes are listed but cannot be chosen),
// client id (validated as the server does), reusable (the default) or one connection, VLESS.
import { useEffect, useMemo, useState, type FormEvent } from 'react';
import { createSession, loadZones, navigate, useStore } from '../store/index.ts';
import { selectCreateError, selectCreating, selectZones, selectZonesError, selectZonesLoad } from '../store/selectors.ts';
import { ErrorBanner, FormRow, Screen, Spinner } from '../components/ui.tsx';

const CLIENT_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

const names = typeof Intl !== 'undefined' && 'DisplayNames' in Intl ? new Intl.DisplayNames(['en'], { type: 'region' }) : null;
function countryName(code: string): string {
  try {
    return names?.of(code) ?? code;
  } catch {
    return code;
  }
}

export function validateClientId(v: string): string | null {
  if (!v) return 'Enter the client id: who this session is for.';
  if (v.length > 128) return 'A client id is at most 128 characters.';
  if (!CLIENT_ID.test(v)) return 'Use only letters, digits and . _ : @ - (no spaces).';
  return null;
}

/** Reusable (the default) or one connection: VPN apps open a connection per request, so a one-shot link dies at once. */
function ConnectionsChoice({ reusable, setReusable }: { reusable: boolean; setReusable: (v: boolean) => void }) {
  return (
    <fieldset className="choice" aria-describedby="reusable-help">
      <legend>Connections</legend>
      <label className="radio">
        <input type="radio" name="reusable" checked={reusable} onChange={() => setReusable(true)} />
        <span>Reusable</span>
      </label>
      <label className="radio">
        <input type="radio" name="reusable" checked={!reusable} onChange={() => setReusable(false)} />
        <span>One connection, then ended</span>
      </label>
      <p id="reusable-help" className="help">
        {reusable
          ? 'Reusable: the link keeps working for many connections (VPN apps open one per request) and can be paused and resumed.'
          : 'One connection, then ended: the session ends when its first connection closes, and the link stops working. Most VPN apps open several connections, so this suits a single test only.'}
      </p>
    </fieldset>
  );
}

/** The client id with its rule, or why it is refused (`error`, once the field was left or the form sent). */
function ClientIdField({ value, onChange, onBlur, error }: { value: string; onChange: (v: string) => void; onBlur: () => void; error: string | null }) {
  return (
    <FormRow label="Client ID" htmlFor="client-id">
      <input
        id="client-id"
        value={value}
        onChange={(e) => onChange(e.target.value)}
        onBlur={onBlur}
        autoComplete="off"
        spellCheck={false}
        placeholder="e.g. alice@example.com"
        aria-invalid={!!error}
        aria-describedby="client-help"
      />
      <p id="client-help" className={error ? 'help help-error' : 'help'}>
        {error ? error : 'Who the session is for: 1–128 letters, digits or . _ : @ -'}
      </p>
    </FormRow>
  );
}

export function NewSessionScreen() {
  const zones = useStore(selectZones);
  const zonesLoad = useStore(selectZonesLoad);
  const zonesError = useStore(selectZonesError);
  const creating = useStore(selectCreating);
  const createError = useStore(selectCreateError);
  const firstUsable = useMemo(() => zones.find((z) => z.has_active_nodes)?.code ?? '', [zones]);
  const [zone, setZone] = useState('');
  const [clientId, setClientId] = useState('');
  // Reusable by default: VPN apps open a connection per request, so a one-shot link dies at once.
  const [reusable, setReusable] = useState(true);
  const [touched, setTouched] = useState(false);

  useEffect(() => {
    if (!zone && firstUsable) setZone(firstUsable);
  }, [firstUsable, zone]);

  const byCountry = useMemo(() => {
    const m = new Map<string, typeof zones>();
    for (const z of zones) m.set(z.country, [...(m.get(z.country) ?? []), z]);
    return [...m.entries()];
  }, [zones]);
  const clientError = validateClientId(clientId);
  const chosen = zones.find((z) => z.code === zone);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setTouched(true);
    if (clientError || !zone) return; // both say why below the fields
    const s = await createSession({ client_id: clientId, zone, connection_type: 'vless', reusable });
    if (s) navigate({ name: 'session', id: s.id });
  };

  return (
    <Screen name="new" title="New session">
      <form className="form card" onSubmit={submit} noValidate>
        <FormRow label="Zone" htmlFor="zone">
          <select id="zone" value={zone} onChange={(e) => setZone(e.target.value)} aria-describedby="zone-help" aria-invalid={touched && !zone} disabled={zonesLoad === 'loading' && !zones.length}>
            {!zone ? <option value="">Choose a zone</option> : null}
            {byCountry.map(([country, list]) => (
              <optgroup key={country} label={`${countryName(country)} (${country})`}>
                {list.map((z) => (
                  <option key={z.code} value={z.code} disabled={!z.has_active_nodes}>
                    {z.has_active_nodes ? z.name : `${z.name} (no active nodes)`}
                  </option>
                ))}
              </optgroup>
            ))}
          </select>
          <p id="zone-help" className={touched && !zone && zonesLoad !== 'loading' ? 'help help-error' : 'help'}>
            {zonesLoad === 'loading' ? <Spinner label="Loading zones…" /> : touched && !zone ? (zones.length ? 'No zone has active nodes right now, so no session can be created. Try again later.' : 'Choose a zone.') : chosen ? `Country ${chosen.country}${chosen.cities.length ? `, cities: ${chosen.cities.join(', ')}` : ''}. Zones without active nodes are shown but cannot be chosen.` : 'Zones without active nodes are shown but cannot be chosen.'}
          </p>
          <ErrorBanner error={zonesError} onRetry={() => void loadZones()} />
        </FormRow>
        <ClientIdField value={clientId} onChange={setClientId} onBlur={() => setTouched(true)} error={touched ? clientError : null} />
        <ConnectionsChoice reusable={reusable} setReusable={setReusable} />
        <FormRow label="Connection type">
          <span className="pill">VLESS</span>
        </FormRow>
        <ErrorBanner error={createError} />
        <div className="actions">
          <button type="submit" className="btn btn-primary" disabled={creating}>
            {creating ? 'Creating…' : 'Create session'}
          </button>
        </div>
      </form>
    </Screen>
  );
}
