// The tray: an icon that shows whether any session is active, a tooltip with the live total
// speed, and a context menu carrying every essential action (Open, each active session with
// Pause or Resume, Quit), because the tray's click event does not fire on Linux.
// Updates are throttled: the tooltip at most once a second, the menu only when it changes.
import type { Menu as MenuType, MenuItemConstructorOptions, NativeImage, Tray as TrayType } from 'electron';
import type { LiveSession } from './live.ts';
import { speed } from './live.ts';

export interface TrayDeps {
  createTray(icon: NativeImage): TrayType;
  buildMenu(items: MenuItemConstructorOptions[]): MenuType;
  icons: { idle: NativeImage; active: NativeImage };
  open(): void;
  openSession(id: string): void;
  pause(id: string): void;
  resume(id: string): void;
  quit(): void;
}

const MAX_ITEMS = 15;

/** "Last refused 14:03:07: paused" (the reason is the API's code; the window says it in words). */
export function refusalLabel(r: { reason: string; at: string }): string {
  const d = new Date(r.at);
  const time = Number.isNaN(d.getTime()) ? r.at : d.toLocaleTimeString();
  return `Last refused ${time}: ${r.reason.replace(/_/g, ' ')}`;
}

export class TrayController {
  #tray: TrayType;
  #deps: TrayDeps;
  #menuKey = '';
  #tooltip = '';
  #activeIcon: boolean | null = null;
  #pending: { sessions: LiveSession[]; totals: { up: number; down: number; active: number } } | null = null;
  #timer: NodeJS.Timeout | null = null;
  #last = 0;

  constructor(deps: TrayDeps) {
    this.#deps = deps;
    this.#tray = deps.createTray(deps.icons.idle);
    this.#tray.setToolTip('VPN Access Desk');
    this.#tray.on('click', () => deps.open()); // Windows and macOS; Linux uses the menu
    this.#render([], { up: 0, down: 0, active: 0 });
  }

  /** Schedules an update; at most one render per second however often it is called. */
  update(sessions: LiveSession[], totals: { up: number; down: number; active: number }): void {
    this.#pending = { sessions, totals };
    if (this.#timer) return;
    const wait = Math.max(0, 1000 - (Date.now() - this.#last));
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#last = Date.now();
      const p = this.#pending;
      this.#pending = null;
      if (p) this.#render(p.sessions, p.totals);
    }, wait);
  }

  #render(sessions: LiveSession[], totals: { up: number; down: number; active: number }): void {
    const active = totals.active > 0;
    if (active !== this.#activeIcon) {
      this.#activeIcon = active;
      this.#tray.setImage(active ? this.#deps.icons.active : this.#deps.icons.idle);
    }
    const tip = active ? `VPN Access Desk — ${totals.active} active\n↑ ${speed(totals.up)}  ↓ ${speed(totals.down)}` : 'VPN Access Desk — no active session';
    if (tip !== this.#tooltip) {
      this.#tooltip = tip;
      this.#tray.setToolTip(tip);
    }
    const shown = sessions.slice(0, MAX_ITEMS);
    // 'empty' keys the no-session menu too, so an idle tray is not rebuilt on every render;
    // the hidden "…and N more" count is part of the menu, so it is part of the key.
    const key = (shown.map((s) => `${s.id}:${s.paused}:${s.reusable}:${s.lastRefusal?.at ?? ''}`).join('|') || 'empty') + `#${sessions.length}`;
    if (key === this.#menuKey) return;
    this.#menuKey = key;
    const items: MenuItemConstructorOptions[] = [{ label: 'Open VPN Access Desk', click: () => this.#deps.open() }, { type: 'separator' }];
    if (!shown.length) items.push({ label: 'No active sessions', enabled: false });
    for (const s of shown) {
      items.push({
        label: `${s.client_id} · ${s.zone}${s.paused ? ' (paused)' : ''}`,
        submenu: [
          { label: 'Open', click: () => this.#deps.openSession(s.id) },
          s.paused
            ? { label: 'Resume', enabled: s.reusable, click: () => this.#deps.resume(s.id) }
            : { label: 'Pause', enabled: s.reusable, click: () => this.#deps.pause(s.id) },
          ...(s.lastRefusal ? [{ label: refusalLabel(s.lastRefusal), enabled: false }] : []),
        ],
      });
    }
    if (sessions.length > MAX_ITEMS) items.push({ label: `…and ${sessions.length - MAX_ITEMS} more`, click: () => this.#deps.open() });
    items.push({ type: 'separator' }, { label: 'Quit', click: () => this.#deps.quit() });
    this.#tray.setContextMenu(this.#deps.buildMenu(items));
  }

  destroy(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#tray.destroy();
  }
}
