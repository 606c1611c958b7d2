// Every session, virtualized (only the visible rows exist in the DOM), with filters and
// live counters. Arrow keys move between rows; Enter opens one.
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useRef, useState, type CSSProperties, type KeyboardEvent } from 'react';
import { PHONE_QUERY, useMediaQuery } from '../lib/media.ts';
import { loadClientsOf, loadMoreSessions, loadSessions, navigate, NO_SESSION_FILTER, setSessionFilter, syncNewest, useStore } from '../store/index.ts';
import { SessionRow } from './SessionRow.tsx';
import { ClientLinkList } from './ClientsScreen.tsx';
import { selectClientIds, selectFilteredIds, useRowClients, selectSessionCount, selectSessionFilter, selectSessionsError, selectSessionsLoad, selectSessionsMore, selectZones } from '../store/selectors.ts';
import { EmptyState, ErrorBanner, Screen, Spinner, StatusBadge } from '../components/ui.tsx';

const ROW = 56;
/** How long the rows in view stay put before their clients' standing is read. */
const SETTLE_MS = 150;
/** Below 768 px each row is a card of four lines (phone.css). */
const PHONE_ROW = 124;

/** A few rows: the list is as tall as they are (styles.css caps it at the window), not a window-high empty box. */
const rowsHeight = (rows: number, total: number): CSSProperties | undefined => (rows ? ({ '--rows-height': `${total}px` } as CSSProperties) : undefined);

/** The clients of the loaded sessions, each a link to its client view (subscription, sessions). */
function ClientLinks() {
  const clients = useStore(selectClientIds);
  if (clients.length === 0) return null;
  return (
    <details className="clients">
      <summary>Clients and subscriptions ({clients.length}): each client's sessions and usage</summary>
      <ClientLinkList ids={clients.slice(0, 200)} />
    </details>
  );
}

function HeaderRow() {
  return (
    <div className="srow srow-head" role="row" aria-rowindex={1} aria-label="Columns">
      <span role="columnheader">Client</span>
      <span role="columnheader">Status</span>
      <span role="columnheader">Usage of cap</span>
      <span role="columnheader" className="c-num">Uploaded</span>
      <span role="columnheader" className="c-num">Downloaded</span>
      <span role="columnheader" className="c-num c-speed">Speed up / down</span>
      <span role="columnheader" className="c-num c-duration">Duration</span>
      <span role="columnheader" className="c-actions">Actions</span>
    </div>
  );
}

/** Search, status and zone: the list's filters (kept in the store). */
function SessionFilters() {
  const filter = useStore(selectSessionFilter);
  const zones = useStore(selectZones);
  return (
  <div className="filters" role="search">
    <label>
      <span>Search</span>
      <input type="search" value={filter.text} placeholder="Client or session id" onChange={(e) => setSessionFilter({ text: e.target.value })} />
    </label>
    <label>
      <span>Status</span>
      <select value={filter.status} onChange={(e) => setSessionFilter({ status: e.target.value })}>
        <option value="">All</option>
        <option value="created">Created</option>
        <option value="active">Active</option>
        <option value="idle">Idle</option>
        <option value="ended">Ended</option>
        <option value="paused">Paused</option>
        <option value="over_quota">Over quota</option>
      </select>
    </label>
    <label>
      <span>Zone filter</span>
      <select value={filter.zone} onChange={(e) => setSessionFilter({ zone: e.target.value })}>
        <option value="">All zones</option>
        {zones.map((z) => (
          <option key={z.code} value={z.code}>
            {z.name}
          </option>
        ))}
      </select>
    </label>
  </div>
  );
}

/** The clock the rows judge speeds by (every 2 s), and sessions made elsewhere picked up within 5 s. */
function useSessionSync(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 2000);
    // Sessions made elsewhere (the API, another window) show up within 5 s.
    const sync = setInterval(() => void syncNewest(), 5000);
    const onFocus = () => void syncNewest();
    window.addEventListener('focus', onFocus);
    return () => {
      clearInterval(t);
      clearInterval(sync);
      window.removeEventListener('focus', onFocus);
    };
  }, []);
  return now;
}

/**
 * The standing of the clients of the rows in view (over quota, disabled, usage against the cap): read
 * for those clients only (a few dozen, one request), never the whole client list. A client scrolled
 * into view is read once the scrolling settles; the rows in view are read again every 10 s and when
 * the window gets the focus.
 */
function useClientStanding(ids: string[], first: number, last: number): void {
  const shown = useRowClients(ids, first, last);
  const current = useRef(shown);
  current.current = shown;
  const fresh = useRef(true);
  useEffect(() => {
    const t = setTimeout(() => {
      // On opening, every row's client (what is held may be old); then only those not held yet.
      void loadClientsOf(current.current, { missingOnly: !fresh.current });
      if (current.current.length > 0) fresh.current = false;
    }, SETTLE_MS);
    return () => clearTimeout(t);
  }, [shown]);
  useEffect(() => {
    const again = () => void loadClientsOf(current.current);
    const t = setInterval(again, 10_000);
    window.addEventListener('focus', again);
    return () => {
      clearInterval(t);
      window.removeEventListener('focus', again);
    };
  }, []);
}

/** The count (and whether older sessions wait on the server), the spinner, Load older and Refresh. */
function SessionsHead({ shown, total }: { shown: number; total: number }) {
  const load = useStore(selectSessionsLoad);
  const more = useStore(selectSessionsMore);
  return (
    <>
      <span className="muted" data-testid="session-count">
        {shown === total ? `${total} session${total === 1 ? '' : 's'}` : `${shown} of ${total} session${total === 1 ? '' : 's'}`}
        {more ? ' loaded (the newest; older ones load as you scroll)' : ''}
      </span>
      {load === 'loading' ? <Spinner label="Loading sessions…" /> : null}
      <span className="grow" />
      {more ? (
        <button type="button" className="btn" disabled={load === 'loading'} onClick={() => void loadMoreSessions()}>
          Load older sessions
        </button>
      ) : null}
      <button type="button" className="btn" onClick={() => void loadSessions()}>
        Refresh
      </button>
    </>
  );
}

export function SessionsScreen() {
  const ids = useStore(selectFilteredIds);
  const total = useStore(selectSessionCount);
  const load = useStore(selectSessionsLoad);
  const error = useStore(selectSessionsError);
  const more = useStore(selectSessionsMore);
  const parentRef = useRef<HTMLDivElement>(null);
  const phone = useMediaQuery(PHONE_QUERY);
  const now = useSessionSync();

  const virtualizer = useVirtualizer({
    count: ids.length,
    getScrollElement: () => parentRef.current,
    estimateSize: () => (phone ? PHONE_ROW : ROW),
    overscan: 8,
  });
  useEffect(() => virtualizer.measure(), [phone, virtualizer]);
  // Scrolled to the last rows loaded while older sessions wait on the server: the next page.
  const lastShown = virtualizer.getVirtualItems().at(-1)?.index ?? -1;
  useClientStanding(ids, virtualizer.getVirtualItems()[0]?.index ?? 0, lastShown);
  useEffect(() => {
    if (more && load === 'ready' && ids.length > 0 && lastShown >= ids.length - 10) void loadMoreSessions();
  }, [more, load, lastShown, ids.length]);

  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp' && e.key !== 'Home' && e.key !== 'End') return;
    const current = (document.activeElement as HTMLElement | null)?.closest<HTMLElement>('[data-index]')?.dataset.index;
    let i = current === undefined ? -1 : Number(current);
    if (e.key === 'ArrowDown') i = Math.min(ids.length - 1, i + 1);
    else if (e.key === 'ArrowUp') i = Math.max(0, i - 1);
    else if (e.key === 'Home') i = 0;
    else i = ids.length - 1;
    e.preventDefault();
    virtualizer.scrollToIndex(i);
    requestAnimationFrame(() => parentRef.current?.querySelector<HTMLElement>(`[data-index="${i}"]`)?.focus());
  };

  return (
    <Screen
      name="sessions"
      title="Sessions"
      head={<SessionsHead shown={ids.length} total={total} />}
    >
      <SessionFilters />
      <ClientLinks />
      <ErrorBanner error={error} onRetry={() => void loadSessions()} />
      {total === 0 && load === 'ready' ? (
        <EmptyState title="No sessions yet">
          <p>A session gives one of your clients a VLESS link to connect with.</p>
          <button type="button" className="btn btn-primary" onClick={() => navigate({ name: 'new' })}>
            Create the first session
          </button>
        </EmptyState>
      ) : ids.length === 0 && load === 'ready' ? (
        <EmptyState title="No session matches these filters">
          <button type="button" className="btn" onClick={() => setSessionFilter(NO_SESSION_FILTER)}>
            Show every session
          </button>
        </EmptyState>
      ) : (
        <div className="table" role="table" aria-label="Sessions" aria-rowcount={ids.length + 1}>
          <HeaderRow />
          <div ref={parentRef} className="table-body" onKeyDown={onKeyDown} data-testid="session-scroller" style={rowsHeight(ids.length, virtualizer.getTotalSize())}>
            <div role="rowgroup" style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
              {virtualizer.getVirtualItems().map((v) => (
                <SessionRow key={ids[v.index]} id={ids[v.index]} index={v.index} top={v.start} now={now} />
              ))}
            </div>
          </div>
        </div>
      )}
    </Screen>
  );
}
