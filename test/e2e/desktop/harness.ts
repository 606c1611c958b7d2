// Runs the desktop app as its parts really are, minus Electron's binary: the bundled main
// process (dist/main/index.cjs) loaded in this Node process with the `electron` stand-in,
// its window a real Chromium page (running the real preload and the real renderer from
// dist/renderer/index.html), and handles for what a person sees outside the window (tray,
// notifications, clipboard). Each launch loads a fresh copy of the bundle, so one process
// can run several apps one after another, each with its own user-data folder.
import Module from 'node:module';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect, type Browser, type Page } from '@playwright/test';
import { createElectron, type FakeBrowserWindow, type MenuItemRecord, type StandInState } from './electron-stand-in.ts';

export const ROOT = join(import.meta.dirname, '..', '..', '..');
export const MAIN_BUNDLE = join(ROOT, 'dist', 'main', 'index.cjs');
export const RENDERER_INDEX = join(ROOT, 'dist', 'renderer', 'index.html');
export const PRELOAD_BUNDLE = join(ROOT, 'dist', 'preload', 'index.cjs');
/** The env variables main reads to aim at a remote server (see main/index.ts). */
const REMOTE_ENV = ['VPN_ACCESS_REMOTE_URL', 'VPN_ACCESS_REMOTE_TOKEN', 'VPN_ACCESS_E2E'] as const;

export interface LaunchOptions {
  browser: Browser;
  /** A user-data folder to reuse (second-instance, restart); a fresh one otherwise. */
  userData?: string;
  /** Aim at a remote server through main's env variables; absent: the embedded server. */
  remote?: { baseUrl: string; token: string };
  encryptionAvailable?: boolean;
  /**
   * The machine's network interfaces as main sees them (os.networkInterfaces), for as long as
   * the app runs: tests offer a loopback address as the "LAN" one, so that sharing binds and
   * is reached without traffic ever leaving loopback.
   */
  interfaces?: ReturnType<typeof os.networkInterfaces>;
  storageBackend?: string;
  keychainLost?: boolean;
}

// The bundle does `require('electron')`: this process answers with the current stand-in.
let current: Record<string, unknown> | null = null;
let hooked = false;
function hookElectron(): void {
  if (hooked) return;
  hooked = true;
  const M = Module as unknown as { _load: (req: string, ...rest: unknown[]) => unknown };
  const orig = M._load;
  M._load = function (req: string, ...rest: unknown[]) {
    if (req === 'electron') {
      if (!current) throw new Error('electron stand-in: no app is being launched');
      return current;
    }
    return orig.call(this, req, ...rest);
  };
}

export class DesktopApp {
  readonly state: StandInState;
  /** The stand-in module itself, as main sees it (safeStorage, clipboard, ...). */
  readonly electron: Record<string, unknown>;
  readonly userData: string;
  readonly exited: Promise<number>;
  readonly #browser: Browser;
  readonly #ownsUserData: boolean;
  readonly #app: { quit(): void };

  constructor(electron: Record<string, unknown>, state: StandInState, userData: string, ownsUserData: boolean, exited: Promise<number>, browser: Browser) {
    this.state = state;
    this.electron = electron;
    this.#app = electron.app as { quit(): void };
    this.userData = userData;
    this.#ownsUserData = ownsUserData;
    this.exited = exited;
    this.#browser = browser;
  }

  get window(): FakeBrowserWindow {
    const w = this.state.windows.filter((x) => !x.isDestroyed()).at(-1);
    if (!w) throw new Error('the app has no open window');
    return w;
  }

  get page(): Page {
    const p = this.window.page;
    if (!p) throw new Error('the window has no page yet');
    return p;
  }

  get tooltip(): string {
    return this.state.tray?.tooltip ?? '';
  }

  trayMenu(): MenuItemRecord[] {
    return this.state.tray?.menu ?? [];
  }

  /** Labels of the tray menu, submenus as "parent > child". */
  trayLabels(): string[] {
    const out: string[] = [];
    const walk = (items: MenuItemRecord[], prefix: string) => {
      for (const i of items) {
        if (i.label) out.push(prefix + i.label);
        if (i.submenu) walk(i.submenu, `${prefix}${i.label} > `);
      }
    };
    walk(this.trayMenu(), '');
    return out;
  }

  /** The tray menu item at a path of labels (a RegExp matches a label), or undefined. */
  trayItem(path: Array<string | RegExp>): MenuItemRecord | undefined {
    let items = this.trayMenu();
    let found: MenuItemRecord | undefined;
    for (const p of path) {
      found = items.find((i) => i.label !== undefined && (typeof p === 'string' ? i.label === p : p.test(i.label)));
      if (!found) return undefined;
      items = found.submenu ?? [];
    }
    return found;
  }

  /** Clicks a tray menu item as a person would; it must exist and be enabled. */
  clickTray(path: Array<string | RegExp>): void {
    const item = this.trayItem(path);
    if (!item) throw new Error(`no tray menu item ${path.join(' > ')} in ${JSON.stringify(this.trayLabels())}`);
    if (!item.enabled) throw new Error(`tray menu item ${path.join(' > ')} is disabled`);
    item.click?.(item, this.window, {});
  }

  /** The system clipboard as the window wrote it (Chromium's clipboard, read by a page
   * allowed to; the app's own window is not). */
  async readClipboard(): Promise<string> {
    const ctx = await this.#browser.newContext({ permissions: ['clipboard-read'] });
    try {
      const file = join(this.userData, 'clipboard-reader.html');
      writeFileSync(file, '<!doctype html><title>clipboard</title>');
      const p = await ctx.newPage();
      await p.goto(pathToFileURL(file).href);
      return await p.evaluate(() => navigator.clipboard.readText());
    } finally {
      await ctx.close();
    }
  }

  /** Undoes LaunchOptions.interfaces once the app has quit. */
  restoreInterfaces?: () => void;

  /** Quits as the app menu's Quit does (app.quit); resolves with the exit code. */
  async quit(): Promise<number> {
    if (this.state.exitCode === null) this.#app.quit();
    const code = await this.exited;
    this.restoreInterfaces?.();
    if (this.#ownsUserData) rmSync(this.userData, { recursive: true, force: true });
    return code;
  }
}

/**
 * Loads a fresh main bundle with a fresh stand-in and waits until the window shows the
 * renderer with its preload bridge. Only one launch runs at a time in a process.
 */
export async function launchDesktop(opts: LaunchOptions): Promise<DesktopApp> {
  hookElectron();
  const ownsUserData = !opts.userData;
  const userData = opts.userData ?? mkdtempSync(join(tmpdir(), 'vad-desktop-'));
  let exit!: (code: number) => void;
  const exited = new Promise<number>((r) => (exit = r));
  const { electron, state } = createElectron({
    userData,
    browser: opts.browser,
    argv: ['electron', MAIN_BUNDLE, `--user-data-dir=${userData}`],
    encryptionAvailable: opts.encryptionAvailable,
    storageBackend: opts.storageBackend,
    keychainLost: opts.keychainLost,
    onExit: (code) => exit(code),
  });
  const req = Module.createRequire(import.meta.url);
  delete req.cache[MAIN_BUNDLE];
  current = electron;
  // main reads its env at the start of start(), right after app 'ready': the overlay holds
  // for exactly that turn, so launches in one process do not leak into each other.
  const saved = Object.fromEntries(REMOTE_ENV.map((k) => [k, process.env[k]]));
  try {
    req(MAIN_BUNDLE);
    for (const k of REMOTE_ENV) delete process.env[k];
    if (opts.remote) {
      process.env.VPN_ACCESS_REMOTE_URL = opts.remote.baseUrl;
      process.env.VPN_ACCESS_REMOTE_TOKEN = opts.remote.token;
      process.env.VPN_ACCESS_E2E = '1';
    }
    (electron as unknown as { markReady(): void }).markReady();
    await new Promise((r) => setImmediate(r));
  } finally {
    for (const k of REMOTE_ENV) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    current = null;
  }
  const app = new DesktopApp(electron, state, userData, ownsUserData, exited, opts.browser);
  if (opts.interfaces) {
    const real = os.networkInterfaces;
    const offered = opts.interfaces;
    os.networkInterfaces = () => offered;
    app.restoreInterfaces = () => {
      os.networkInterfaces = real;
    };
  }
  // Up: the window exists, shows the renderer, and the preload's bridge answers.
  await expect
    .poll(() => state.errors.length > 0 || state.exitCode !== null || state.windows.some((w) => w.visible && w.page), { timeout: 30_000 })
    .toBe(true);
  if (state.errors.length) throw new Error(`the app could not start: ${JSON.stringify(state.errors)}`);
  if (state.exitCode !== null) throw new Error(`the app exited with ${state.exitCode} during start-up`);
  // The same 30 s bound as the window's: main's stand-in shares this Node process with the backend
  // and Playwright's driver, so a renderer that starts loading thousands of sessions at once (the
  // many-sessions spec) keeps the process busy, and one evaluate waited past 10 s in CI.
  await expect.poll(() => app.page.evaluate(() => typeof (window as { app?: unknown }).app), { timeout: 30_000 }).toBe('object');
  return app;
}
