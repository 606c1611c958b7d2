// A stand-in for the `electron` module, so the bundled main process (dist/main/index.cjs)
// runs under Node where Electron's binary is missing. It covers Electron's own API surface
// only — nothing of the app is replaced: a BrowserWindow is a real Chromium page (one
// Playwright browser context per app, like Electron's session), the window runs the real
// preload bundle (see preload-shim.ts), and everything else records or forwards what main
// gives it so tests can read it: IPC handlers, messages sent to the window, the tray's icon,
// tooltip and menu, notifications, the clipboard, safeStorage, permission and request hooks.
import { EventEmitter } from 'node:events';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { Browser, BrowserContext, Frame, Page } from '@playwright/test';
import { requestLock, type InstanceLock, type SecondInstanceMessage } from './single-instance.ts';
import { preloadInitScript, IPC_BINDING, IPC_DELIVER } from './preload-shim.ts';

export interface StandInOptions {
  userData: string;
  /** The browser whose pages are the windows; absent in a process that must never open one. */
  browser?: Browser;
  /** The command line a second instance hands to the first. */
  argv?: string[];
  /** Whether safeStorage reports a system keychain (AES-GCM with a key held by the stand-in). */
  encryptionAvailable?: boolean;
  /** What safeStorage.getSelectedStorageBackend() answers (Linux): default `gnome_libsecret`. */
  storageBackend?: string;
  /** The keychain was reset (or is another one): what an earlier launch stored cannot be decrypted. */
  keychainLost?: boolean;
  /** Called by app.exit. */
  onExit(code: number): void;
}

export interface MenuItemRecord {
  label?: string;
  type?: string;
  enabled: boolean;
  click?: (...a: unknown[]) => void;
  submenu?: MenuItemRecord[];
}

export interface NotificationRecord {
  title: string;
  body: string;
  at: number;
}

type Handler = (event: unknown, ...args: unknown[]) => unknown;

// Electron permission names main may allow, and the Chromium (Playwright) permission that
// each one stands for; main's own check handler decides which are granted.
const PERMISSIONS: Record<string, string> = {
  'clipboard-sanitized-write': 'clipboard-write',
  'clipboard-read': 'clipboard-read',
  notifications: 'notifications',
  geolocation: 'geolocation',
};

/** What the fake module recorded, and the handles tests drive it with. */
export class StandInState {
  readonly handlers = new Map<string, Handler>();
  readonly sent: Array<{ channel: string; args: unknown[] }> = [];
  /** Every IPC call that reached a handler, with the frame URL and what main answered. */
  readonly invoked: Array<{ channel: string; frameUrl: string; args: unknown[]; result: unknown }> = [];
  readonly notifications: NotificationRecord[] = [];
  readonly clipboardWrites: string[] = [];
  readonly errors: Array<{ title: string; content: string }> = [];
  readonly windows: FakeBrowserWindow[] = [];
  readonly imagePaths: string[] = [];
  tray: FakeTray | null = null;
  sandboxEnabled = false;
  permissionCheck: ((wc: unknown, permission: string, origin: string) => boolean) | null = null;
  permissionRequest: unknown = null;
  /** Navigations main's 'will-navigate' prevented, requests its onBeforeRequest cancelled,
   * and window.open calls its window-open handler denied. */
  readonly blockedNavigations: string[] = [];
  readonly cancelledRequests: string[] = [];
  readonly deniedWindows: string[] = [];
  beforeRequest: ((details: { url: string }, cb: (r: { cancel?: boolean }) => void) => void) | null = null;
  headersReceived: unknown = null;
  lock: InstanceLock | null = null;
  exitCode: number | null = null;
  /** What the person answers in the next native dialogs, in order: a folder (null: Cancel), a message box's button index. Nothing queued: Cancel. */
  readonly folderAnswers: Array<string | null> = [];
  readonly buttonAnswers: number[] = [];
  /** Every native dialog main showed (its options), and whether it had the window as its parent. */
  readonly dialogsShown: Array<{ kind: 'open' | 'message'; options: Record<string, unknown>; parented: boolean }> = [];
}

let nextId = 1;

class FakeWebContents extends EventEmitter {
  readonly id = nextId++;
  #win: FakeBrowserWindow;
  #state: StandInState;
  windowOpenHandler: ((d: { url: string }) => { action: 'allow' | 'deny' }) | null = null;
  destroyed = false;

  constructor(win: FakeBrowserWindow, state: StandInState) {
    super();
    this.#win = win;
    this.#state = state;
  }

  /** Main -> renderer: handed to the preload's ipcRenderer listeners, in order. */
  send(channel: string, ...args: unknown[]): void {
    this.#state.sent.push({ channel, args });
    const page = this.#win.page;
    if (!page || page.isClosed()) return;
    page.evaluate(([name, c, a]) => (window as unknown as Record<string, (c: string, a: unknown[]) => void>)[name]?.(c, a), [IPC_DELIVER, channel, args] as const).catch(() => {
      /* a page between documents has no listener: Electron drops the message too */
    });
  }

  setWindowOpenHandler(h: (d: { url: string }) => { action: 'allow' | 'deny' }): void {
    this.windowOpenHandler = h;
  }

  isDestroyed(): boolean {
    return this.destroyed;
  }

  getURL(): string {
    return this.#win.page?.url() ?? '';
  }
}

/** A WebFrameMain as main's sender check sees it: the frame's real URL and its parent. */
function frameMain(frame: Frame): { url: string; parent: unknown; name: string; top: unknown } {
  const parent = frame.parentFrame();
  const self: { url: string; parent: unknown; name: string; top: unknown } = { url: frame.url(), parent: parent ? frameMain(parent) : null, name: frame.name(), top: null };
  let top: Frame = frame;
  while (top.parentFrame()) top = top.parentFrame()!;
  self.top = top === frame ? self : frameMain(top);
  return self;
}

export class FakeBrowserWindow extends EventEmitter {
  readonly id = nextId++;
  readonly webContents: FakeWebContents;
  readonly options: Record<string, unknown>;
  page: Page | null = null;
  context: BrowserContext | null = null;
  /** Resolves when the page exists and the preload and IPC transport are installed. */
  readonly ready: Promise<Page>;
  visible = false;
  focusCount = 0;
  showCount = 0;
  hideCount = 0;
  loadedFile = '';
  #state: StandInState;
  #destroyed = false;
  #shownOnce = false;

  constructor(options: Record<string, unknown>, state: StandInState, app: EventEmitter, browser: Browser | undefined) {
    super();
    this.options = options ?? {};
    this.#state = state;
    this.webContents = new FakeWebContents(this, state);
    state.windows.push(this);
    app.emit('browser-window-created', {}, this);
    app.emit('web-contents-created', {}, this.webContents);
    if (!browser) {
      this.ready = Promise.reject(new Error('this process has no browser: it may not open a window'));
      this.ready.catch(() => {});
      throw new Error('BrowserWindow: this stand-in process has no browser');
    }
    this.ready = this.#open(browser);
    this.ready.catch(() => {});
  }

  async #open(browser: Browser): Promise<Page> {
    const state = this.#state;
    const width = Number(this.options.width ?? 800);
    const height = Number(this.options.height ?? 600);
    // main's permission check handler decides what Chromium grants the window.
    const granted = Object.entries(PERMISSIONS)
      .filter(([electronName]) => state.permissionCheck?.(this.webContents, electronName, 'file:///') ?? false)
      .map(([, chromiumName]) => chromiumName);
    const context = await browser.newContext({ viewport: { width, height }, permissions: granted });
    this.context = context;
    // main's onBeforeRequest decides which requests leave the window (Playwright sees
    // network requests; file:// loads are not routed, as they are local reads).
    await context.route('**/*', (route) => {
      // A navigation the page starts itself (a link, location.href) asks main's
      // 'will-navigate' first, as Electron does; loadFile/goto do not.
      const req = route.request();
      if (req.isNavigationRequest() && !req.frame().parentFrame()) {
        let prevented = false;
        this.webContents.emit('will-navigate', { preventDefault: () => (prevented = true), url: req.url() }, req.url());
        if (prevented) {
          state.blockedNavigations.push(req.url());
          // ERR_ABORTED: Chromium drops the navigation and keeps the page, as Electron does.
          return void route.abort('aborted').catch(() => {});
        }
      }
      const hook = state.beforeRequest;
      if (!hook) return route.continue();
      hook({ url: req.url() }, (r) => {
        if (r.cancel) state.cancelledRequests.push(req.url());
        void (r.cancel ? route.abort('blockedbyclient') : route.continue()).catch(() => {});
      });
    });
    const page = await context.newPage();
    // IPC renderer -> main: ipcRenderer.invoke crosses here with the calling frame, whose
    // real URL and parent reach main's sender check as event.senderFrame.
    await page.exposeBinding(IPC_BINDING, async (source, channel: string, args: unknown[]) => {
      const h = state.handlers.get(channel);
      if (!h) throw new Error(`Error invoking remote method '${channel}': No handler registered for '${channel}'`);
      const event = { sender: this.webContents, senderFrame: frameMain(source.frame), processId: 1, frameId: 1 };
      const list = Array.isArray(args) ? args : [];
      const result = await h(event, ...list);
      state.invoked.push({ channel, frameUrl: source.frame.url(), args: list, result });
      return result;
    });
    const prefs = (this.options.webPreferences ?? {}) as { preload?: string };
    if (prefs.preload) await page.addInitScript({ content: preloadInitScript(readFileSync(prefs.preload, 'utf8'), prefs.preload) });
    page.on('request', (req) => {
      if (req.isNavigationRequest() && req.frame() === page.mainFrame()) this.webContents.emit('did-start-navigation', { isMainFrame: true, isSameDocument: false, url: req.url() });
    });
    // window.open: Chromium opens the popup, and main's window-open handler decides at once.
    page.on('popup', (popup) => {
      const h = this.webContents.windowOpenHandler;
      if (h && h({ url: popup.url() }).action === 'deny') {
        state.deniedWindows.push(popup.url());
        void popup.close();
      }
    });
    page.on('crash', () => this.webContents.emit('render-process-gone', {}, { reason: 'crashed' }));
    page.on('close', () => {
      this.webContents.destroyed = true;
      this.webContents.emit('destroyed');
    });
    this.page = page;
    return page;
  }

  async loadFile(file: string, opts?: { hash?: string; query?: Record<string, string> }): Promise<void> {
    const page = await this.ready;
    this.loadedFile = file;
    const u = pathToFileURL(file);
    if (opts?.query) for (const [k, v] of Object.entries(opts.query)) u.searchParams.set(k, v);
    if (opts?.hash) u.hash = opts.hash;
    await page.goto(u.href, { waitUntil: 'load' });
    this.webContents.emit('did-finish-load');
    if (!this.#shownOnce) {
      this.#shownOnce = true;
      this.emit('ready-to-show');
    }
  }

  show(): void {
    this.visible = true;
    this.showCount++;
    this.emit('show');
  }
  hide(): void {
    this.visible = false;
    this.hideCount++;
    this.emit('hide');
  }
  focus(): void {
    this.focusCount++;
    this.emit('focus');
    void this.page?.bringToFront().catch(() => {});
  }
  isVisible(): boolean {
    return this.visible;
  }
  isDestroyed(): boolean {
    return this.#destroyed;
  }

  /** What the window manager's close button does: 'close' (preventable), then destroy. */
  close(): void {
    let prevented = false;
    this.emit('close', { preventDefault: () => (prevented = true) });
    if (!prevented) void this.destroy();
  }

  async destroy(): Promise<void> {
    if (this.#destroyed) return;
    this.#destroyed = true;
    this.visible = false;
    await this.context?.close().catch(() => {});
    this.webContents.destroyed = true;
    this.emit('closed');
  }
}

export class FakeTray extends EventEmitter {
  image: unknown;
  tooltip = '';
  readonly tooltips: string[] = [];
  readonly images: unknown[] = [];
  menu: MenuItemRecord[] = [];
  destroyed = false;
  constructor(image: unknown) {
    super();
    this.image = image;
    this.images.push(image);
  }
  setToolTip(t: string): void {
    this.tooltip = t;
    this.tooltips.push(t);
  }
  setImage(img: unknown): void {
    this.image = img;
    this.images.push(img);
  }
  setContextMenu(menu: { items: MenuItemRecord[] } | null): void {
    this.menu = menu?.items ?? [];
  }
  destroy(): void {
    this.destroyed = true;
  }
  isDestroyed(): boolean {
    return this.destroyed;
  }
}

function toMenuItems(template: Array<Record<string, unknown>>): MenuItemRecord[] {
  return template.map((t) => ({
    label: t.label as string | undefined,
    type: (t.type as string | undefined) ?? (t.submenu ? 'submenu' : 'normal'),
    enabled: t.enabled !== false,
    click: t.click as MenuItemRecord['click'],
    submenu: Array.isArray(t.submenu) ? toMenuItems(t.submenu as Array<Record<string, unknown>>) : undefined,
  }));
}

const KEYCHAINS = new Map<string, Buffer>();

/** Builds the fake module and its state. */
export function createElectron(opts: StandInOptions): { electron: Record<string, unknown>; state: StandInState } {
  const state = new StandInState();
  const app = new EventEmitter();
  let readyResolve!: () => void;
  const ready = new Promise<void>((r) => (readyResolve = r));
  let isReady = false;
  let quitting = false;
  // safeStorage: the "keychain" is a key this stand-in holds, one per user-data folder, kept
  // across launches in this process as an OS keychain keeps it across restarts; the file on
  // disk is ciphertext. `keychainLost` replaces it, so earlier ciphertext no longer decrypts.
  if (opts.keychainLost || !KEYCHAINS.has(opts.userData)) KEYCHAINS.set(opts.userData, randomBytes(32));
  const key = KEYCHAINS.get(opts.userData)!;

  const appApi = Object.assign(app, {
    name: 'VPN Access Desk',
    enableSandbox: () => void (state.sandboxEnabled = true),
    requestSingleInstanceLock(additionalData?: unknown): boolean {
      state.lock = requestLock(opts.userData, { argv: opts.argv ?? process.argv, cwd: process.cwd(), additionalData: additionalData ?? null }, (m) =>
        app.emit('second-instance', { preventDefault() {} }, m.argv, m.cwd, m.additionalData),
      );
      return state.lock.held;
    },
    hasSingleInstanceLock: () => !!state.lock?.held,
    releaseSingleInstanceLock: () => state.lock?.release(),
    whenReady: () => ready,
    isReady: () => isReady,
    getPath: (name: string) => {
      if (name === 'userData' || name === 'sessionData') return opts.userData;
      throw new Error(`app.getPath('${name}') is not covered by the stand-in`);
    },
    getName: () => 'VPN Access Desk',
    getVersion: () => '0.0.0-stand-in',
    // Like Electron, quitting happens on a later turn of the loop, not inside the call.
    quit() {
      if (quitting) return;
      quitting = true;
      setImmediate(() => {
        app.emit('before-quit', { preventDefault() {} });
        let prevented = false;
        app.emit('will-quit', { preventDefault: () => (prevented = true) });
        if (!prevented) appApi.exit(0);
      });
    },
    exit(code = 0) {
      if (state.exitCode !== null) return;
      state.exitCode = code;
      void (async () => {
        await state.lock?.notified;
        for (const w of state.windows) await w.destroy();
        state.lock?.release();
        opts.onExit(code);
      })();
    },
  });

  const BrowserWindow = class extends FakeBrowserWindow {
    constructor(o: Record<string, unknown>) {
      super(o, state, app, opts.browser);
    }
    static getAllWindows = () => state.windows.filter((w) => !w.isDestroyed());
  };

  const electron = {
    app: appApi,
    BrowserWindow,
    ipcMain: {
      handle(channel: string, fn: Handler) {
        if (state.handlers.has(channel)) throw new Error(`Attempted to register a second handler for '${channel}'`);
        state.handlers.set(channel, fn);
      },
      removeHandler: (channel: string) => void state.handlers.delete(channel),
    },
    Menu: { buildFromTemplate: (items: Array<Record<string, unknown>>) => ({ items: toMenuItems(items) }) },
    nativeImage: {
      createFromPath(p: string) {
        state.imagePaths.push(p);
        return { path: p, isEmpty: () => !existsSync(p) };
      },
    },
    Notification: Object.assign(
      class {
        #o: { title?: string; body?: string };
        constructor(o: { title?: string; body?: string }) {
          this.#o = o ?? {};
        }
        show() {
          state.notifications.push({ title: this.#o.title ?? '', body: this.#o.body ?? '', at: Date.now() });
        }
        close() {}
      },
      { isSupported: () => true },
    ),
    safeStorage: {
      isEncryptionAvailable: () => opts.encryptionAvailable ?? true,
      getSelectedStorageBackend: () => opts.storageBackend ?? 'gnome_libsecret',
      encryptString(plain: string): Buffer {
        const iv = randomBytes(12);
        const c = createCipheriv('aes-256-gcm', key, iv);
        const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
        return Buffer.concat([iv, c.getAuthTag(), body]);
      },
      decryptString(data: Buffer): string {
        const d = createDecipheriv('aes-256-gcm', key, data.subarray(0, 12));
        d.setAuthTag(data.subarray(12, 28));
        return Buffer.concat([d.update(data.subarray(28)), d.final()]).toString('utf8');
      },
    },
    session: {
      defaultSession: {
        setPermissionRequestHandler: (fn: unknown) => void (state.permissionRequest = fn),
        setPermissionCheckHandler: (fn: StandInState['permissionCheck']) => void (state.permissionCheck = fn),
        webRequest: {
          onHeadersReceived: (fn: unknown) => void (state.headersReceived = fn),
          onBeforeRequest: (fn: StandInState['beforeRequest']) => void (state.beforeRequest = fn),
        },
      },
    },
    Tray: class extends FakeTray {
      constructor(image: unknown) {
        super(image);
        state.tray = this;
      }
    },
    clipboard: {
      writeText: (t: string) => void state.clipboardWrites.push(t),
      readText: () => state.clipboardWrites.at(-1) ?? '',
    },
    dialog: {
      // Electron's signatures: (window, options) or (options).
      showOpenDialog: async (...a: unknown[]) => {
        const options = a.at(-1) as Record<string, unknown>;
        state.dialogsShown.push({ kind: 'open', options, parented: a.length === 2 });
        const folder = state.folderAnswers.length ? state.folderAnswers.shift()! : null;
        return folder === null ? { canceled: true, filePaths: [] } : { canceled: false, filePaths: [folder] };
      },
      showMessageBox: async (...a: unknown[]) => {
        const options = a.at(-1) as Record<string, unknown>;
        state.dialogsShown.push({ kind: 'message', options, parented: a.length === 2 });
        return { response: state.buttonAnswers.length ? state.buttonAnswers.shift()! : (options.cancelId as number), checkboxChecked: false };
      },
      showErrorBox: (title: string, content: string) => {
        state.errors.push({ title, content });
        console.error(`[electron stand-in] error box: ${title}: ${content}`);
      },
    },
  };
  // app 'ready' comes from whoever hosts the stand-in, once it is set up.
  (electron as unknown as { markReady(): void }).markReady = () => {
    isReady = true;
    app.emit('ready');
    readyResolve();
  };
  return { electron, state };
}
