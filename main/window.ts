// The app's one window: made with the hardened webPreferences, shown when ready, opened on a
// route when asked (tray "Open" on a session), hidden to the tray on close unless the app is
// quitting. It tells its owner when the page it shows is gone (reload, crash, destroyed), so
// the event streams that page opened can be closed.
import { BrowserWindow } from 'electron';
import { secureWebPreferences } from './security.ts';

export interface AppWindowOptions {
  preload: string;
  rendererIndex: string;
  /** The page that opened streams no longer listens: its reload, crash or end. */
  onPageGone(): void;
}

export class AppWindow {
  #opts: AppWindowOptions;
  #win: BrowserWindow | null = null;

  /** The window while it exists (native dialogs are shown over it). */
  get browserWindow(): BrowserWindow | null {
    return this.#win && !this.#win.isDestroyed() ? this.#win : null;
  }
  #quitting = false;

  constructor(opts: AppWindowOptions) {
    this.#opts = opts;
    this.#create();
  }

  /** From now on closing the window closes it (the app is quitting). */
  allowClose(): void {
    this.#quitting = true;
  }

  /** Shows and focuses the window (making it again if it was destroyed), on `hash` when given. */
  show(hash?: string): void {
    if (!this.#win || this.#win.isDestroyed()) this.#create(hash);
    else if (hash) this.#win.webContents.send('app:navigate', hash);
    this.#win!.show();
    this.#win!.focus();
  }

  /** Sends to the page when there is one. */
  send(channel: string, message: unknown): void {
    if (this.#win && !this.#win.isDestroyed()) this.#win.webContents.send(channel, message);
  }

  #create(hash?: string): void {
    const win = new BrowserWindow({
      width: 1200,
      height: 800,
      minWidth: 820,
      minHeight: 560,
      show: false,
      title: 'VPN Access Desk',
      autoHideMenuBar: true,
      backgroundColor: '#00000000',
      webPreferences: secureWebPreferences(this.#opts.preload),
    });
    this.#win = win;
    win.once('ready-to-show', () => win.show());
    // A reloaded or crashed page no longer listens to the streams it opened: close them, or
    // each reload would leave its event streams (and their server connections) running.
    const gone = () => this.#opts.onPageGone();
    win.webContents.on('did-start-navigation', (e) => {
      if (e.isMainFrame && !e.isSameDocument) gone();
    });
    win.webContents.on('render-process-gone', gone);
    win.webContents.on('destroyed', gone);
    // Closing the window hides it to the tray; Quit (tray menu, or app quit) really quits.
    win.on('close', (e) => {
      if (!this.#quitting) {
        e.preventDefault();
        win.hide();
      }
    });
    // A new window starts on the asked-for route (a message sent before it loads would be lost).
    void win.loadFile(this.#opts.rendererIndex, hash ? { hash: hash.replace(/^#/, '') } : undefined);
  }
}
