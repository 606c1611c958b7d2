// Settings → "Let other devices connect" (desktop): a switch and this machine's addresses (the
// LAN address preselected). On: main restarts the embedded server bound to that address (links,
// subscriptions and the API there; the API still wants its token), egress `lan`. Then a QR
// code of a session's link or of its client's subscription URL, for the phone to scan.
// In web mode the server was started from the command line, so the card says which flags do it.
import { useEffect, useMemo, useState } from 'react';
import { loadLanSharing, loadSubscription, setLanSharing, useStore } from '../store/index.ts';
import { ErrorBanner, FormRow, Spinner, Switch } from '../components/ui.tsx';
import { QrImage } from '../components/Qr.tsx';
import { selectLan, selectLanError, selectLanPending, selectPlatformKind, selectPublicHost, selectSessionOrder, selectSessions, selectSubscription } from '../store/selectors.ts';

function WebExplanation() {
  const host = useStore(selectPublicHost);
  const example = host && host !== '127.0.0.1' && host !== 'localhost' ? host : '192.168.1.20';
  return (
    <>
      <p>
        This page talks to a server started from the command line, so that server decides where it listens. To let phones and other computers on your network connect, start it on
        this machine's LAN address:
      </p>
      <pre className="code-block" aria-label="Command to let other devices connect">{`vpn-access serve --host ${example} --public-host ${example} --egress lan`}</pre>
      <p className="help">
        <code>--host</code> is the address it listens on, <code>--public-host</code> the address links and subscriptions carry, and <code>--egress lan</code> the policy for
        traffic from those devices. The API still needs its token.
      </p>
    </>
  );
}

function ScanCode() {
  const sessions = useStore(selectSessions);
  const order = useStore(selectSessionOrder);
  const usable = useMemo(() => order.filter((id) => sessions[id] && sessions[id].status !== 'ended'), [order, sessions]);
  const [chosen, setChosen] = useState('');
  const [what, setWhat] = useState<'link' | 'subscription'>('link');
  const id = usable.includes(chosen) ? chosen : usable[0];
  const s = id ? sessions[id] : undefined;
  const sub = useStore(selectSubscription(s?.client_id));
  useEffect(() => {
    if (s) void loadSubscription(s.client_id);
  }, [s?.client_id]);
  if (!s) return <p className="muted">Create a session, then scan its code here with the phone.</p>;
  const text = what === 'subscription' && sub?.sub ? sub.sub.url : s.configuration_link;
  return (
    <div className="scan">
      <FormRow label="Session" htmlFor="lan-session">
        <select id="lan-session" value={id} onChange={(e) => setChosen(e.target.value)}>
          {usable.slice(0, 200).map((sid) => (
            <option key={sid} value={sid}>
              {sessions[sid].client_id} · {sessions[sid].zone} · {sid.slice(0, 8)}
            </option>
          ))}
        </select>
      </FormRow>
      <fieldset className="inline">
        <legend>Code for</legend>
        <label className="radio">
          <input type="radio" name="lan-what" checked={what === 'link'} onChange={() => setWhat('link')} />
          Session link
        </label>
        <label className="radio">
          <input type="radio" name="lan-what" checked={what === 'subscription'} disabled={!sub?.sub} onChange={() => setWhat('subscription')} />
          Subscription URL{sub?.sub ? '' : ' (off for this client)'}
        </label>
      </fieldset>
      <QrImage text={text} label={what === 'subscription' && sub?.sub ? 'QR code to scan: subscription URL' : 'QR code to scan: session link'} />
      <p className="mono small wrap" data-testid="lan-qr-text">{text}</p>
    </div>
  );
}

export function LanSharingCard() {
  const kind = useStore(selectPlatformKind);
  const lan = useStore(selectLan);
  const pending = useStore(selectLanPending);
  const error = useStore(selectLanError);
  const [address, setAddress] = useState('');
  const [wanted, setWanted] = useState<boolean | null>(null);
  useEffect(() => {
    if (kind === 'electron') void loadLanSharing();
  }, [kind]);
  useEffect(() => {
    if (lan && !address) setAddress(lan.address && lan.addresses.some((a) => a.address === lan.address) ? lan.address : (lan.suggested ?? ''));
  }, [lan, address]);

  let body;
  if (kind === 'web') body = <WebExplanation />;
  else if (!lan) body = error ? <ErrorBanner error={error} onRetry={() => void loadLanSharing()} /> : <Spinner label="Reading this computer's addresses…" />;
  else if (!lan.supported) body = <p>{lan.reason}</p>;
  else
    body = (
      <>
        <p className="help">Phones and other computers on your network connect to this computer. Links and subscriptions then carry the address chosen here.</p>
        <Switch
          label="Let other devices connect"
          className="lan-switch"
          checked={wanted ?? lan.enabled}
          disabled={pending || (!lan.enabled && !address)}
          onChange={async (enabled) => {
            // The switch shows the asked-for state while the server restarts.
            setWanted(enabled);
            await setLanSharing({ enabled, address: address || undefined });
            setWanted(null);
          }}
        />
        {lan.addresses.length === 0 ? (
          <p className="muted">This computer has no network address other devices could reach: connect it to a network first.</p>
        ) : (
          <FormRow label="Address other devices use" htmlFor="lan-address">
            <select
              id="lan-address"
              value={address}
              disabled={pending}
              onChange={(e) => {
                setAddress(e.target.value);
                if (lan.enabled) void setLanSharing({ enabled: true, address: e.target.value });
              }}
            >
              {lan.addresses.map((a) => (
                <option key={a.address} value={a.address}>
                  {a.address} ({a.interface}
                  {a.lan ? ', local network' : a.family === 6 ? ', IPv6' : ''})
                </option>
              ))}
            </select>
          </FormRow>
        )}
        {pending ? <Spinner label="Restarting the server…" /> : null}
        <ErrorBanner error={error} />
        <p className="muted" data-testid="lan-state">
          {lan.enabled ? `On: the server listens on ${lan.address}; egress policy lan.` : 'Off: only this computer can connect (the server listens on 127.0.0.1).'}
        </p>
        {lan.enabled ? <ScanCode /> : null}
      </>
    );

  return (
    <div className="card">
      <h2>Let other devices connect</h2>
      {body}
    </div>
  );
}
