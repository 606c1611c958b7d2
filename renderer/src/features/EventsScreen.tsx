// The live event stream, filtered by session and type, read as a person would: "Connection
// opened" / "Connection closed" (lib/event-words.ts), each with its session's client when the
// session is loaded.
import { useMemo } from 'react';
import type { SessionEvent } from '../../../common/api-types.ts';
import { formatBytes, formatDuration, formatTime } from '../lib/format.ts';
import { routeHref } from '../store/routing.ts';
import { clearEvents, NO_EVENT_FILTER, setEventFilter, useStore } from '../store/index.ts';
import { EmptyState, ErrorBanner, Screen } from '../components/ui.tsx';
import { selectEventFilter, selectEvents, selectSessions, selectStreamError, selectStreamState } from '../store/selectors.ts';
import { EVENT_TYPES, eventWords } from '../lib/event-words.ts';

function EventTable({ events }: { events: SessionEvent[] }) {
  const sessions = useStore(selectSessions);
  return (
    <div className="card">
      <table className="events" aria-label="Event list">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Time</th>
            <th scope="col">Type</th>
            <th scope="col">Client</th>
            <th scope="col">Session</th>
            <th scope="col" className="c-num">Uploaded</th>
            <th scope="col" className="c-num">Downloaded</th>
            <th scope="col" className="c-num">Duration</th>
          </tr>
        </thead>
        {/* Not a live region: with many active sessions, stats rows arrive several times a
            second, and announcing each would drown a screen reader. The "Live" status says
            the stream is running. */}
        <tbody>
          {events.map((e) => (
            <tr key={e.id} data-event-type={e.event_type}>
              <td className="mono muted" data-label="#">{e.id}</td>
              <td className="mono" data-label="Time">{formatTime(e.created_at)}</td>
              <td data-label="Type">
                <span className={`evtype ev-${eventWords(e.event_type).tone}`}>{eventWords(e.event_type).label}</span>
              </td>
              <td data-label="Client">{clientCell(sessions[e.session_id]?.client_id)}</td>
              <td className="mono" data-label="Session">
                <a href={routeHref({ name: 'session', id: e.session_id })}>{e.session_id.slice(0, 8)}</a>
              </td>
              <td className="c-num" data-label="Uploaded">{formatBytes(e.uploaded_bytes)}</td>
              <td className="c-num" data-label="Downloaded">{formatBytes(e.downloaded_bytes)}</td>
              <td className="c-num" data-label="Duration">{formatDuration(e.duration)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The session's client, linked to its page; a dash while the session is not loaded. */
function clientCell(clientId: string | undefined) {
  if (!clientId) return <span className="muted">—</span>;
  return <a href={routeHref({ name: 'client', id: clientId })}>{clientId}</a>;
}

export function EventsScreen() {
  const events = useStore(selectEvents);
  const filter = useStore(selectEventFilter);
  const streamState = useStore(selectStreamState);
  const streamError = useStore(selectStreamError);
  const shown = useMemo(() => {
    const q = filter.sessionId.trim().toLowerCase();
    return events.filter((e) => (!filter.type || e.event_type === filter.type) && (!q || e.session_id.toLowerCase().startsWith(q))).slice(0, 500);
  }, [events, filter]);

  return (
    <Screen
      name="events"
      title="Events"
      head={
        <>
          <span className={`stream stream-${streamState}`} role="status">
            {streamState === 'open' ? 'Live' : streamState === 'reconnecting' ? 'Reconnecting…' : streamState === 'connecting' ? 'Connecting…' : 'Stopped'}
          </span>
          <span className="grow" />
          <button type="button" className="btn" onClick={clearEvents} disabled={!events.length}>
            Clear
          </button>
        </>
      }
    >
      {streamState !== 'open' ? <ErrorBanner error={streamError} /> : null}
      <div className="filters" role="search">
        <label>
          <span>Session filter</span>
          <input type="search" value={filter.sessionId} placeholder="Session id (or its start)" onChange={(e) => setEventFilter({ sessionId: e.target.value })} />
        </label>
        <label>
          <span>Event type</span>
          <select value={filter.type} onChange={(e) => setEventFilter({ type: e.target.value })}>
            <option value="">All types</option>
            {EVENT_TYPES.map((t) => (
              <option key={t} value={t}>
                {eventWords(t).label}
              </option>
            ))}
          </select>
        </label>
      </div>
      {shown.length === 0 ? (
        <EmptyState title={events.length ? 'No event matches these filters' : 'Waiting for events'}>
          {events.length ? (
            <button type="button" className="btn" onClick={() => setEventFilter(NO_EVENT_FILTER)}>
              Show every event
            </button>
          ) : (
            <p>Events appear here live when clients connect, send traffic and disconnect.</p>
          )}
        </EmptyState>
      ) : (
        <EventTable events={shown} />
      )}
    </Screen>
  );
}
