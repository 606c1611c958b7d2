// One session: status, live counters and speed chart, its usage history chart, the configuration link (copy + QR),
// the configuration as fields, Pause and Resume, the client's subscription (in short, with a
// link to the client view) and the session's own event timeline.
import { useEffect, useState } from 'react';
import type { AuditPage, SessionEvent } from '../../../common/api-types.ts';
import { formatBytes, formatDateTime, formatDuration, formatSpeed, formatTime } from '../lib/format.ts';
import { fetchSession, listAudit, loadClient, navigate, pollStatus, setPaused, useStore, watchHistory, watchTimeline, type SessionView } from '../store/index.ts';
import { readStore, selectClient, selectActionError, selectActionPending, selectSession, selectSpeedHistory, selectTimeline } from '../store/selectors.ts';
import { CopyButton, EmptyState, ErrorBanner, Field, Screen, Spinner } from '../components/ui.tsx';
import { Badges } from '../components/standing.tsx';
import { linkBlock, sessionBadges } from '../lib/standing.ts';
import { SpeedChart } from '../components/SpeedChart.tsx';
import { routeHref } from '../store/routing.ts';
import { QrImage } from '../components/Qr.tsx';
import { SubscriptionSummary } from './ClientScreen.tsx';
import { QuotaNotice } from './QuotaNotice.tsx';
import { UsagePanel } from '../components/UsageChart.tsx';
import { auditWords, eventWords } from '../lib/event-words.ts';
import { ConnectionsCard } from './ConnectionsCard.tsx';
import { RefusalsCard } from './RefusalsCard.tsx';

/** This session's live timeline (the store streams it while the screen is open). */
function useTimeline(id: string) {
  useEffect(() => watchTimeline(id), [id]);
  return useStore(selectTimeline(id));
}

type AuditEntry = AuditPage['entries'][number];

/**
 * Who changed this session (the audit trail: created, paused, resumed), read again whenever the
 * session's paused flag changes (by this window or anyone else) and every 10 s while open.
 */
function useAudit(id: string, paused: boolean | undefined) {
  const [entries, setEntries] = useState<AuditEntry[]>([]);
  useEffect(() => {
    let live = true;
    const load = () =>
      listAudit({ session_id: id, limit: 100 })
        .then((page) => live && setEntries(page.entries))
        .catch(() => {
          /* the trail is a complement: the timeline shows the traffic events without it */
        });
    void load();
    const t = setInterval(() => void load(), 10_000);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [id, paused]);
  return entries;
}


/** "owner · token 1a2b3c4d", or "the command line". */
export function actorLabel(actor: AuditEntry['actor']): string {
  if (actor.role === 'cli') return 'the command line';
  return actor.token_id ? `${actor.role} · token ${actor.token_id.slice(0, 8)}` : actor.role;
}

type TimelineItem = { kind: 'event'; at: string; key: string; ev: SessionEvent } | { kind: 'audit'; at: string; key: string; entry: AuditEntry };

/** Loads the session when it is not in the store yet, and polls its counters while the screen is open. */
function useSessionLoad(id: string) {
  const [missing, setMissing] = useState(false);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    watchHistory(id, true);
    setMissing(false); // the answer for the previous id does not hold for this one
    setLoadError(null);
    let stopped = false;
    let t: ReturnType<typeof setInterval> | undefined;
    // Counters while the screen is open: once a second (events bring them every 5 s).
    // Not for a session that does not exist: that would ask the server every second for nothing.
    const poll = () => {
      if (!stopped && !t) t = setInterval(() => void pollStatus(id), 1000);
    };
    if (readStore(selectSession(id))) poll();
    else
      void fetchSession(id).then((r) => {
        if (stopped) return;
        // Only the server's "not found" means missing; any other failure can be retried.
        setMissing(r.error?.code === 'session_not_found');
        setLoadError(r.error && r.error.code !== 'session_not_found' ? r.error.message : null);
        if (r.session) poll();
      });
    return () => {
      stopped = true;
      if (t) clearInterval(t);
      watchHistory(id, false);
    };
  }, [id, attempt]);
  return { missing, loadError, retry: () => setAttempt((n) => n + 1) };
}

function SessionMissing({ missing, loadError, retry }: { missing: boolean; loadError: string | null; retry: () => void }) {
  return (
    <section className="screen">
      {missing ? (
        <EmptyState title="Session not found">
          <p>It does not exist, or belongs to another customer.</p>
          <button type="button" className="btn" onClick={() => navigate({ name: 'sessions' })}>
            Back to sessions
          </button>
        </EmptyState>
      ) : loadError ? (
        <EmptyState title="Could not load the session">
          <p>{loadError}</p>
          <button type="button" className="btn" onClick={retry}>
            Try again
          </button>
        </EmptyState>
      ) : (
        <Spinner label="Loading session…" />
      )}
    </section>
  );
}

/** Traffic events and changes made to the session (audit), newest first. */
function SessionTimeline({ id, paused }: { id: string; paused: boolean | undefined }) {
  const events = useTimeline(id);
  const audit = useAudit(id, paused);
  const timeline: TimelineItem[] = [
    ...events.map((ev): TimelineItem => ({ kind: 'event', at: ev.created_at, key: `e${ev.id}`, ev })),
    ...audit.filter((a) => auditWords(a.action)).map((entry): TimelineItem => ({ kind: 'audit', at: entry.created_at, key: `a${entry.id}`, entry })),
  ].sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
  return (
    <div className="card">
      <h2>Timeline</h2>
      {timeline.length === 0 ? (
        <p className="muted">No events yet: they appear when a client connects.</p>
      ) : (
        <ol className="timeline" aria-label="Session events">
          {timeline.map((item) =>
            item.kind === 'event' ? (
              <li key={item.key} data-event-type={item.ev.event_type}>
                <span className="mono muted">{formatTime(item.ev.created_at)}</span>
                <span className={`evtype ev-${eventWords(item.ev.event_type).tone}`}>{eventWords(item.ev.event_type).label}</span>
                <span>
                  ↑ {formatBytes(item.ev.uploaded_bytes)} · ↓ {formatBytes(item.ev.downloaded_bytes)} · {formatDuration(item.ev.duration)}
                </span>
              </li>
            ) : (
              <li key={item.key} className="audit-item" data-audit-action={item.entry.action}>
                <span className="mono muted">{formatTime(item.entry.created_at)}</span>
                <span className={`evtype ev-audit ev-${auditWords(item.entry.action)!.tone}`}>{auditWords(item.entry.action)!.label}</span>
                <span>
                  {auditWords(item.entry.action)!.verb} by {actorLabel(item.entry.actor)}
                </span>
              </li>
            ),
          )}
        </ol>
      )}
    </div>
  );
}

/**
 * The configuration link (copy, QR) and the configuration as fields. A link that can carry no
 * traffic now is greyed, with the reason; one that never will again (ended, expired) cannot be
 * copied either, while one refused for a while (paused, over quota, client disabled or
 * expired) still can: it works again, unchanged, once the reason is lifted.
 */
function ConnectCard({ s, block }: { s: SessionView; block: ReturnType<typeof linkBlock> }) {
  const c = s.configuration;
  return (
    <div className="card">
      <h2>Connect</h2>
      <p className="help">Import this link into a VLESS client (v2rayN, v2rayNG, Nekoray, Shadowrocket…), or scan the code.</p>
      {block ? (
        <p className="notice link-blocked" role="status" id="link-blocked" data-testid="link-blocked" data-final={block.final}>
          <strong>{block.final ? 'This link no longer works.' : 'This link is refused for now.'}</strong> {block.reason}
          {block.final ? ' Copying it is turned off.' : ' It can still be copied: the same link works again once this is lifted.'}
        </p>
      ) : null}
      <div className={block ? 'link-row greyed' : 'link-row'} aria-describedby={block ? 'link-blocked' : undefined}>
        <code className="link" data-testid="configuration-link">{s.configuration_link}</code>
        <CopyButton text={s.configuration_link} label="Copy link" disabled={block?.final} title={block?.reason} />
      </div>
      <div className={block ? 'qr-box greyed' : 'qr-box'}>
        <QrImage text={s.configuration_link} label={block ? `QR code of the configuration link (${block.final ? 'no longer works' : 'refused for now'})` : 'QR code of the configuration link'} size={168} />
      </div>
      <h3>Configuration</h3>
      <dl className="kvs">
        <Field label="Protocol" value={c.protocol} />
        <Field label="Address" value={c.address} mono />
        <Field label="Port" value={c.port} mono />
        <Field label="User id" value={c.id} mono />
        <Field label="Encryption" value={c.encryption} />
        <Field label="Network" value={c.network === 'ws' ? 'WebSocket (ws)' : 'TCP'} />
        {c.path ? <Field label="Path" value={c.path} mono /> : null}
        <Field label="Security" value={c.security === 'tls' ? 'TLS' : 'none'} />
        {c.sni ? <Field label="SNI" value={c.sni} mono /> : null}
      </dl>
    </div>
  );
}

export function SessionDetail({ id }: { id: string }) {
  const s = useStore(selectSession(id));
  const history = useStore(selectSpeedHistory(id));
  const pending = useStore(selectActionPending(id));
  const actionError = useStore(selectActionError(id));
  const { missing, loadError, retry } = useSessionLoad(id);
  const client = useStore(selectClient(s?.client_id ?? ''));
  const clientId = s?.client_id;
  useEffect(() => {
    if (clientId) void loadClient(clientId);
  }, [clientId]);
  if (!s) return <SessionMissing missing={missing} loadError={loadError} retry={retry} />;

  const canPause = s.reusable && !s.paused && s.status !== 'ended';
  const canResume = s.reusable && s.paused && s.status !== 'ended';
  const now = Date.now();
  const block = linkBlock(s, client, now);
  return (
    <Screen
      name="detail"
      title={<>Session <span className="mono">{s.id.slice(0, 8)}</span></>}
      head={
        <>
          <Badges badges={sessionBadges(s, client, now)} />
          <span className="grow" />
          <div className="btn-group" role="group" aria-label="Session actions">
            <button type="button" className="btn" disabled={!canPause || pending} onClick={() => void setPaused(id, true)}>
              Pause
            </button>
            <button type="button" className="btn" disabled={!canResume || pending} onClick={() => void setPaused(id, false)}>
              Resume
            </button>
          </div>
        </>
      }
    >
      {!s.reusable ? <p className="help">This session is not reusable, so it cannot be paused or resumed.</p> : null}
      <ErrorBanner error={actionError} />

      <div className="grid2">
        <div className="card">
          <h2>Traffic</h2>
          {s.over_quota ? (
            <p className="notice quota-notice" role="status" data-testid="over-quota">
              <strong>Over quota{s.over_quota_until ? ` until ${formatDateTime(s.over_quota_until)}` : ' (rolling 30 days)'}.</strong> A byte cap that renews is reached: new connections are refused until it renews, by itself.
            </p>
          ) : null}
          <QuotaNotice clientId={s.client_id} />
          <dl className="kvs">
            <Field label="Client" value={<a href={routeHref({ name: 'client', id: s.client_id })} aria-label={`Client ${s.client_id}: subscription and sessions`}>{s.client_id}</a>} />
            <Field label="Zone" value={s.zone} />
            {s.node ? <Field label="Node" value={<span data-testid="session-node">{s.node}</span>} /> : null}
            <Field label="Status" value={`${s.status}${s.paused ? ' (paused)' : ''}`} />
            <Field label="Uploaded" value={<span data-testid="uploaded-bytes" data-value={s.uploaded_bytes}>{formatBytes(s.uploaded_bytes)}</span>} />
            <Field label="Downloaded" value={<span data-testid="downloaded-bytes" data-value={s.downloaded_bytes}>{formatBytes(s.downloaded_bytes)}</span>} />
            <Field label="Speed" value={`↑ ${formatSpeed(s.up_speed)} · ↓ ${formatSpeed(s.down_speed)}`} />
            <Field label="Duration" value={formatDuration(s.duration)} />
            <Field label="Created" value={formatDateTime(s.created_at)} />
            <Field label="Reusable" value={s.reusable ? 'yes' : 'no'} />
            {s.expires_at ? <Field label="Expires" value={<span data-testid="expires-at">{formatDateTime(s.expires_at)}</span>} /> : null}
          </dl>
          <SpeedChart samples={history ?? []} />
        </div>

        <ConnectCard s={s} block={block} />
      </div>

      <div className="grid2">
        <ConnectionsCard id={id} />
        <RefusalsCard s={s} />
      </div>

      <UsagePanel filter={{ session_id: id }} subject="this session" title="Usage history" />

      <SubscriptionSummary clientId={s.client_id} />

      <SessionTimeline id={id} paused={s.paused} />
    </Screen>
  );
}
