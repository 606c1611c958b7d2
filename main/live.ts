// What the tray needs to know, kept by the main process from its own event stream:
// which sessions are active and how fast each one moves.
import type { Session, SessionEvent } from '../common/api-types.ts';

export interface LiveSession {
  id: string;
  client_id: string;
  zone: string;
  paused: boolean;
  reusable: boolean;
  status: Session['status'];
  up: number;
  down: number;
  uploaded: number;
  downloaded: number;
  at: number;
  /** The session's newest refusal (GET /v2/sessions/{id}/refusals), read by the notifier every REFUSALS_MS. */
  lastRefusal?: { reason: string; at: string };
}

/** Sessions kept beyond the active ones (idle, created) before the oldest are forgotten. */
export const MAX_KEPT_SESSIONS = 1000;

export class LiveState {
  /** Active, paused and recently seen sessions; ended ones are not kept (they never move again). */
  readonly sessions = new Map<string, LiveSession>();

  seed(list: Session[]): void {
    for (const s of list) this.put(s);
  }

  put(s: Session): LiveSession {
    const prev = this.sessions.get(s.id);
    const v: LiveSession = {
      id: s.id,
      client_id: s.client_id,
      zone: s.zone,
      paused: s.paused,
      reusable: s.reusable,
      status: s.status,
      up: prev?.up ?? 0,
      down: prev?.down ?? 0,
      uploaded: s.uploaded_bytes,
      downloaded: s.downloaded_bytes,
      at: Date.now(),
      ...(prev?.lastRefusal ? { lastRefusal: prev.lastRefusal } : {}),
    };
    if (v.status !== 'active' || v.paused) {
      v.up = 0;
      v.down = 0;
    }
    // The map holds what the tray can show: an ended session is returned (the notifier reads
    // it) but not kept, and past MAX_KEPT_SESSIONS the oldest idle ones are forgotten.
    if (v.status === 'ended') this.sessions.delete(s.id);
    else {
      this.sessions.set(s.id, v);
      this.#trim();
    }
    return v;
  }

  #trim(): void {
    if (this.sessions.size <= MAX_KEPT_SESSIONS) return;
    for (const [id, v] of this.sessions) {
      if (this.sessions.size <= MAX_KEPT_SESSIONS) break;
      if (v.status !== 'active' && !v.paused) this.sessions.delete(id);
    }
  }

  /** Applies an event; returns the session when it is known. */
  apply(e: SessionEvent): LiveSession | undefined {
    const v = this.sessions.get(e.session_id);
    if (!v) return undefined;
    const now = Date.now();
    const dt = (now - v.at) / 1000;
    // Events closer than 200 ms apart do not move the baseline, or the bytes between them
    // would drop out of the next speed.
    if (dt > 0.2) {
      v.up = Math.max(0, (e.uploaded_bytes - v.uploaded) / dt);
      v.down = Math.max(0, (e.downloaded_bytes - v.downloaded) / dt);
      v.uploaded = e.uploaded_bytes;
      v.downloaded = e.downloaded_bytes;
      v.at = now;
    }
    if (e.event_type === 'session_start' || e.event_type === 'session_heartbeat') v.status = 'active';
    if (e.event_type === 'session_end') {
      v.up = 0;
      v.down = 0;
    }
    return v;
  }

  active(): LiveSession[] {
    return [...this.sessions.values()].filter((s) => s.status === 'active' || (s.paused && s.status !== 'ended'));
  }

  totals(): { up: number; down: number; active: number } {
    let up = 0;
    let down = 0;
    let active = 0;
    const stale = Date.now() - 12_000;
    for (const s of this.sessions.values()) {
      if (s.status !== 'active' || s.paused) continue;
      active++;
      if (s.at >= stale) {
        up += s.up;
        down += s.down;
      }
    }
    return { up, down, active };
  }
}

export function speed(bps: number): string {
  const units = ['B/s', 'KB/s', 'MB/s', 'GB/s'];
  let v = bps;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 10 || i === 0 ? v.toFixed(0) : v.toFixed(1)} ${units[i]}`;
}
