// The frame around the screens: the header with live totals, the navigation (a sidebar; below
// 768 px a menu the header's Menu button opens, Escape closes), the connection notices and
// the toasts.
import { useEffect, useRef, useState, type RefObject } from 'react';
import { formatSpeed } from '../lib/format.ts';
import { routeHref, type Route } from '../store/routing.ts';
import { dismissToast, useStore } from '../store/index.ts';
import { selectRoute, selectStreamState, selectToasts, useSignedInAs, useTotals } from '../store/selectors.ts';

const NAV: Array<{ label: string; route: Route; match: Route['name'][] }> = [
  { label: 'Sessions', route: { name: 'sessions' }, match: ['sessions', 'session'] },
  { label: 'Clients', route: { name: 'clients' }, match: ['clients', 'client'] },
  { label: 'New session', route: { name: 'new' }, match: ['new'] },
  { label: 'Dashboard', route: { name: 'dashboard' }, match: ['dashboard'] },
  { label: 'Limits', route: { name: 'limits', scope: 'global' }, match: ['limits'] },
  { label: 'Events', route: { name: 'events' }, match: ['events'] },
  { label: 'Proxy', route: { name: 'proxy' }, match: ['proxy'] },
  { label: 'Settings', route: { name: 'settings' }, match: ['settings'] },
];

const NAV_ID = 'main-nav';

function Header({ menuOpen, onMenu, menuRef }: { menuOpen: boolean; onMenu: () => void; menuRef: RefObject<HTMLButtonElement | null> }) {
  const t = useTotals();
  const stream = useStore(selectStreamState);
  const who = useSignedInAs();
  return (
    <header className="topbar">
      <button ref={menuRef} type="button" className="btn menu-button" aria-expanded={menuOpen} aria-controls={NAV_ID} onClick={onMenu}>
        <span aria-hidden="true">☰</span> Menu
      </button>
      <span className="brand">
        <span className={`dot ${t.active ? 'dot-on' : ''}`} aria-hidden="true" />
        VPN Access Desk
      </span>
      <span className="grow" />
      {who ? (
        <span className="stat stat-wide" title="The API token in use signs in as this customer (role)">
          {who}
        </span>
      ) : null}
      <span className="stat" aria-label="Active sessions">
        {t.active} active
      </span>
      <span className="stat stat-wide" aria-label="Total speed">
        ↑ {formatSpeed(t.up)} · ↓ {formatSpeed(t.down)}
      </span>
      <span className={`stream stream-${stream}`} title="Event stream">
        {stream === 'open' ? 'live' : stream}
      </span>
    </header>
  );
}

function Nav({ open, route }: { open: boolean; route: Route }) {
  return (
    <nav id={NAV_ID} className={open ? 'sidenav open' : 'sidenav'} aria-label="Main">
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
  );
}

/** The header and the navigation, with the phone menu's state: closed again on every new screen and by Escape. */
export function Frame() {
  const route = useStore(selectRoute);
  const [open, setOpen] = useState(false);
  const menuRef = useRef<HTMLButtonElement>(null);
  useEffect(() => setOpen(false), [route]);
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape') return;
      setOpen(false);
      menuRef.current?.focus();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [open]);
  return (
    <>
      <Header menuOpen={open} onMenu={() => setOpen((o) => !o)} menuRef={menuRef} />
      <Nav open={open} route={route} />
    </>
  );
}

export function Toasts() {
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
