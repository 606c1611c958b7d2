// One row of the Sessions list: the client (with zone and last seen), the badges in words,
// the usage bar against the client's byte cap in force, the counters, and the row's actions
// (Pause/Resume, Copy link) as real buttons. The row itself is the keyboard stop: Enter opens
// the session; clicking anywhere but a button does too.
import type { KeyboardEvent, MouseEvent } from 'react';
import { formatBytes, formatDuration, formatSpeed } from '../lib/format.ts';
import { clientUsage, lastSeenWords, linkBlock, sessionBadges } from '../lib/standing.ts';
import { routeHref } from '../store/routing.ts';
import { navigate, setPaused, useStore } from '../store/index.ts';
import { selectActionPending, selectClient, selectSession } from '../store/selectors.ts';
import { CopyButton } from '../components/ui.tsx';
import { Badges, UsageBar } from '../components/standing.tsx';

/** Upload over download (styles.css), side by side on the phone's cards. */
function SpeedPair({ up, down }: { up: number; down: number }) {
  return (
    <span className="speed-pair" title="Upload / download speed">
      <span>↑ {formatSpeed(up)}</span> <span>↓ {formatSpeed(down)}</span>
    </span>
  );
}

export function SessionRow({ id, index, top, now }: { id: string; index: number; top: number; now: number }) {
  const s = useStore(selectSession(id));
  const client = useStore(selectClient(s?.client_id ?? ''));
  const pending = useStore(selectActionPending(id));
  if (!s) return null;
  // A speed not refreshed for 12 s (stats arrive every 5 s) is stale: show zero.
  const fresh = now - s.sampled_at < 12_000;
  const badges = sessionBadges(s, client, now);
  const block = linkBlock(s, client, now);
  const active = s.status === 'active' && !s.paused;
  const open = () => navigate({ name: 'session', id });
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.key === 'Enter' && e.target === e.currentTarget) open();
  };
  const onClick = (e: MouseEvent<HTMLDivElement>) => {
    if (!(e.target as HTMLElement).closest('button, a')) open();
  };
  const canToggle = s.reusable && s.status !== 'ended';
  return (
    <div
      role="row"
      tabIndex={0}
      aria-rowindex={index + 2}
      className={block ? 'srow srow-blocked' : 'srow'}
      data-index={index}
      data-session-id={id}
      style={{ transform: `translateY(${top}px)` }}
      aria-label={`Session for ${s.client_id} in ${s.zone}, ${badges.map((b) => b.text).join(', ')}`}
      onKeyDown={onKeyDown}
      onClick={onClick}
    >
      <span role="cell" className="c-client">
        <a href={routeHref({ name: 'session', id })} tabIndex={-1} className="c-client-id" title={s.client_id}>
          {s.client_id}
        </a>
        <span className="c-sub muted small">
          {client || active ? `${s.zone} · ${lastSeenWords(client?.last_seen, active, now)}` : s.zone}
        </span>
      </span>
      <span role="cell" className="c-status">
        <Badges badges={badges} />
      </span>
      <span role="cell" className="c-usage">
        {client ? <UsageBar usage={clientUsage(client)} label={`Usage of ${s.client_id} against its byte cap`} compact /> : null}
      </span>
      <span role="cell" className="c-num"><span className="srow-label" aria-hidden="true">↑ </span>{formatBytes(s.uploaded_bytes)}</span>
      <span role="cell" className="c-num"><span className="srow-label" aria-hidden="true">↓ </span>{formatBytes(s.downloaded_bytes)}</span>
      <span role="cell" className="c-num c-speed">
        <span className="srow-label" aria-hidden="true">Speed </span>
        {fresh ? <SpeedPair up={s.up_speed} down={s.down_speed} /> : '—'}
      </span>
      <span role="cell" className="c-num c-duration"><span className="srow-label" aria-hidden="true">For </span>{formatDuration(s.duration)}</span>
      <span role="cell" className="c-actions">
        <button
          type="button"
          className="btn btn-small"
          disabled={!canToggle || pending}
          title={canToggle ? undefined : s.status === 'ended' ? 'An ended session cannot be paused or resumed.' : 'This session is not reusable, so it cannot be paused or resumed.'}
          aria-label={`${s.paused ? 'Resume' : 'Pause'} the session of ${s.client_id}`}
          onClick={(e) => {
            e.stopPropagation();
            void setPaused(id, !s.paused);
          }}
        >
          {s.paused ? 'Resume' : 'Pause'}
        </button>
        <CopyButton
          small
          text={s.configuration_link}
          label={`Copy link of ${s.client_id}'s session`}
          caption="Copy link"
          disabled={block?.final}
          title={block?.reason}
        />
      </span>
    </div>
  );
}
