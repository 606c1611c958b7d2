// Every client of the customer at a glance: its status in words, its usage against the byte
// cap in force, how many sessions it has and when it was last seen; each row opens the client
// page. Found by a part of its id and by status; shown a hundred rows at a time (ten thousand rows
// at once took seconds to draw, and again at each refresh). Read again every 10 s while open, less
// often where the list is large (useClientsSync). A server without the clients API gets the clients
// of the loaded sessions instead, each a link to its page.
import { useEffect, useState } from 'react';
import { CLIENT_STATUSES, type ClientStatus } from '../../../common/client-types.ts';
import { clientBadges, clientUsage, lastSeenWords } from '../lib/standing.ts';
import { routeHref } from '../store/routing.ts';
import { loadClients, navigate, useStore } from '../store/index.ts';
import { selectClientIds, selectClientOrder, selectClients, selectClientsError, selectClientsLoad } from '../store/selectors.ts';
import { AnyOrOptions, EmptyState, ErrorBanner, Screen, Spinner } from '../components/ui.tsx';
import { QuotaBanner } from './QuotaNotice.tsx';
import { Badges, UsageBar } from '../components/standing.tsx';

/** The least time between two reads of the list while the screen is open. */
const REFRESH_MS = 10_000;
/** Each read is followed by a pause at least this many times as long as it took (about 1 % of the server's time)... */
const PAUSE_FACTOR = 100;
/** ...but never longer than this (a read that timed out is not a reason to wait for minutes). */
const MAX_PAUSE_MS = 60_000;

/**
 * The list read now, then again REFRESH_MS after each answer, or longer where the list is large: the
 * whole list costs the server time in proportion to the clients (about 290 ms at 10,000 clients), so
 * an open screen stays near 1 % of it (every 29 s there) instead of 3 %.
 */
function useClientsSync(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let live = true;
    const read = async () => {
      const began = performance.now();
      await loadClients();
      if (!live) return;
      timer = setTimeout(() => {
        setNow(Date.now());
        void read();
      }, Math.min(MAX_PAUSE_MS, Math.max(REFRESH_MS, (performance.now() - began) * PAUSE_FACTOR)));
    };
    void read();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, []);
  return now;
}

function ClientsTable({ ids, now }: { ids: string[]; now: number }) {
  const clients = useStore(selectClients);
  return (
    <table className="events table-cards clients-table" aria-label="Clients">
      <thead>
        <tr aria-label="Columns">
          <th scope="col">Client</th>
          <th scope="col">Status</th>
          <th scope="col">Usage of cap</th>
          <th scope="col" className="c-num">Sessions</th>
          <th scope="col">Last seen</th>
        </tr>
      </thead>
      <tbody>
        {ids.map((id) => {
          const c = clients[id]!;
          const badges = clientBadges(c, now);
          return (
            <tr key={id} data-client-id={id} aria-label={`${id}: ${badges.map((b) => b.text).join(', ')}`}>
              <td data-label="Client" className="c-client">
                <a href={routeHref({ name: 'client', id })} aria-label={`Client ${id}`}>
                  {id}
                </a>
              </td>
              <td data-label="Status">
                <Badges badges={badges} />
              </td>
              <td data-label="Usage">
                <UsageBar usage={clientUsage(c)} label={`Usage of ${id} against its byte cap`} />
              </td>
              <td data-label="Sessions" className="c-num">
                {c.sessions}
              </td>
              <td data-label="Last seen">{lastSeenWords(c.last_seen, c.status === 'active', now)}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** Client ids, each a link to its client view (subscription, sessions, usage). */
export function ClientLinkList({ ids, className }: { ids: string[]; className?: string }) {
  return (
    <ul className={className} aria-label="Clients">
      {ids.map((c) => (
        <li key={c}>
          <a href={routeHref({ name: 'client', id: c })} aria-label={`Client ${c}`}>
            {c}
          </a>
        </li>
      ))}
    </ul>
  );
}

/** Without the clients API: the clients of the loaded sessions. */
function SessionClients() {
  const ids = useStore(selectClientIds);
  return (
    <div className="card">
      <p className="help">This server does not list clients on their own; these are the clients of the loaded sessions.</p>
      <ClientLinkList ids={ids} className="plain-list" />
    </div>
  );
}

/** Rows drawn at first, and added by each "Show more". */
const ROWS = 100;

function ClientFilters({ text, status, onText, onStatus }: { text: string; status: ClientStatus | ''; onText: (t: string) => void; onStatus: (s: ClientStatus | '') => void }) {
  return (
    <div className="filters" role="search">
      <label>
        <span>Search</span>
        <input type="search" value={text} placeholder="Part of a client id" onChange={(e) => onText(e.target.value)} />
      </label>
      <label>
        <span>Status</span>
        <select value={status} onChange={(e) => onStatus(e.target.value as ClientStatus | '')}>
          <AnyOrOptions any="All" values={CLIENT_STATUSES} label={statusWords} />
        </select>
      </label>
    </div>
  );
}

/** A client status in words: "over quota". */
const statusPhrase = (s: string) => s.replace('_', ' ');
/** A client status as the filter names it: "Over quota". */
const statusWords = (s: string) => statusPhrase(s.charAt(0).toUpperCase() + s.slice(1));

/** What matched nothing, in words: the search, the status, or both. */
function noMatchWords(text: string, status: ClientStatus | ''): string {
  const state = statusPhrase(status);
  if (text && status) return `No ${state} client has "${text}" in its id.`;
  if (text) return `No client id contains "${text}".`;
  return `No client is ${state} right now.`;
}

/** The first `rows` of the matching clients, then how many more and a button for the next hundred. */
function ClientRows({ ids, now, nothing, onClear }: { ids: string[]; now: number; nothing: string; onClear: () => void }) {
  const [rows, setRows] = useState(ROWS);
  if (ids.length === 0) {
    return (
      <EmptyState title="No client matches">
        <p>{nothing}</p>
        <button type="button" className="btn" onClick={onClear}>
          Show every client
        </button>
      </EmptyState>
    );
  }
  const rest = ids.length - rows;
  return (
    <>
      <ClientsTable ids={ids.slice(0, rows)} now={now} />
      {rest > 0 ? (
        <p className="more-rows">
          <span className="muted" data-testid="clients-shown">
            {rows} of {ids.length} clients shown
          </span>{' '}
          <button type="button" className="btn" onClick={() => setRows(rows + ROWS)}>
            Show {Math.min(ROWS, rest)} more
          </button>
        </p>
      ) : null}
    </>
  );
}

export function ClientsScreen() {
  const now = useClientsSync();
  const order = useStore(selectClientOrder);
  const clients = useStore(selectClients);
  const load = useStore(selectClientsLoad);
  const error = useStore(selectClientsError);
  const [status, setStatus] = useState<ClientStatus | ''>('');
  const [text, setText] = useState('');
  const needle = text.trim().toLowerCase();
  const ids = order.filter((id) => (!status || clients[id]?.status === status) && (!needle || id.toLowerCase().includes(needle)));
  return (
    <Screen
      name="clients"
      title="Clients"
      head={
        <>
          <span className="muted">{load === 'ready' ? `${order.length} client${order.length === 1 ? '' : 's'}` : ''}</span>
          {load === 'loading' ? <Spinner label="Loading clients…" /> : null}
          <span className="grow" />
          <button type="button" className="btn" onClick={() => void loadClients()}>
            Refresh
          </button>
        </>
      }
    >
      <ErrorBanner error={error} onRetry={() => void loadClients()} />
      {load === 'unsupported' ? (
        <SessionClients />
      ) : load === 'ready' && order.length === 0 ? (
        <EmptyState title="No clients yet">
          <p>A client appears here with its first session: its usage, limits, expiry and devices are managed on its page.</p>
          <button type="button" className="btn btn-primary" onClick={() => navigate({ name: 'new' })}>
            Create a session
          </button>
        </EmptyState>
      ) : order.length > 0 ? (
        <>
          <QuotaBanner />
          <ClientFilters text={text} status={status} onText={setText} onStatus={setStatus} />
          {/* A new search or status starts again from the first hundred. */}
          <ClientRows
            key={`${status} ${needle}`}
            ids={ids}
            now={now}
            nothing={noMatchWords(text.trim(), status)}
            onClear={() => {
              setText('');
              setStatus('');
            }}
          />
        </>
      ) : null}
    </Screen>
  );
}
