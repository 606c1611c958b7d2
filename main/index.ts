// Composition root of the desktop app. It starts, and on quit stops, everything: the
// single-instance lock, the embedded server (startServer from server/, on loopback), the
// owner token (kept by TokenStore, never sent to the renderer), the API client and event
// streams aimed at the embedded or a remote server, the window, the tray and notifications.
import { app, BrowserWindow, clipboard, dialog, ipcMain, Menu, nativeImage, Notification, safeStorage, session as electronSession, Tray, type WebContents } from 'electron';
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import type { RunningServer } from '../server/serve.ts';
import { startServer } from '../server/serve.ts';
import type { StreamMessage } from '../common/ipc-contract.ts';
import type { ConnectionInfo, EventFilter, SessionEvent } from '../common/api-types.ts';
import { ApiClient, type Endpoint } from './api-client.ts';
import { fail } from '../common/result.ts';
import { EventStream } from '../common/event-stream.ts';
import { EventSource } from 'eventsource';
import { registerIpc, type Handlers } from './ipc.ts';
import { LiveState } from './live.ts';
import { hardenContents, hardenSession, isTrustedFrame, secureWebPreferences } from './security.ts';
import { SettingsFile } from './settings.ts';
import { TokenStore } from './token-store.ts';
import { TrayController } from './tray.ts';

const ROOT = join(__dirname, '..', '..'); // dist/main/index.cjs -> app root
const RENDERER_INDEX = join(ROOT, 'dist', 'renderer', 'index.html');
const PRELOAD = join(ROOT, 'dist', 'preload', 'index.cjs');
const ICONS = join(ROOT, 'build', 'icons');

app.enableSandbox();
if (!app.requestSingleInstanceLock()) {
  app.quit();
} else {
  app.on('second-instance', () => showWindow());
  // A failure inside start() (the embedded server cannot open its database, say) must end
  // the process with a message, not leave it running with no window and no tray.
  app.whenReady()
    .then(start)
    .catch((e: unknown) => {
      console.error('failed to start', e);
      dialog.showErrorBox('VPN Access Desk could not start', e instanceof Error ? e.message : String(e));
      app.exit(1);
    });
}

let win: BrowserWindow | null = null;
let quitting = false;
let server: RunningServer | null = null;
let endpoint: Endpoint | null = null;
let tray: TrayController | null = null;
let monitor: EventStream | null = null;
const rendererStreams = new Map<string, EventStream>();
const MAX_RENDERER_STREAMS = 16;
const live = new LiveState();
const disposers: Array<() => void | Promise<void>> = [];

async function start(): Promise<void> {
  const userData = app.getPath('userData');
  mkdirSync(userData, { recursive: true });
  const settings = new SettingsFile(userData);
  const tokens = new TokenStore(userData, safeStorage);
  const serverDir = join(userData, 'server');

  // Tests (and support staff) may aim the app at a remote server without touching settings.
  const envRemote = process.env.VPN_ACCESS_REMOTE_URL && process.env.VPN_ACCESS_REMOTE_TOKEN
    ? { baseUrl: process.env.VPN_ACCESS_REMOTE_URL.replace(/\/$/, ''), token: process.env.VPN_ACCESS_REMOTE_TOKEN }
    : null;

  async function startEmbedded(): Promise<Endpoint> {
    if (!server) {
      const opts = { dataDir: serverDir, host: '127.0.0.1', firstCustomer: 'local' };
      try {
        server = await startServer({ ...opts, port: settings.get().embeddedPort ?? 0 });
      } catch (e) {
        if ((e as { code?: string }).code !== 'EADDRINUSE') throw e;
        server = await startServer({ ...opts, port: 0 });
      }
      // Keep the port: configuration links handed out earlier carry it.
      if (settings.get().embeddedPort !== server.apiPort) settings.update({ embeddedPort: server.apiPort });
      if (server.ownerToken) tokens.write('embedded', server.ownerToken);
      else if (!tokens.read('embedded')) tokens.write('embedded', server.services.tokens.create({ customer: 'local', role: 'owner' }));
    }
    return { baseUrl: server.baseUrl, token: tokens.read('embedded') ?? '' };
  }

  async function selectEndpoint(): Promise<void> {
    const before = endpoint?.baseUrl;
    const s = settings.get();
    if (envRemote) endpoint = envRemote;
    else if (s.mode === 'remote' && s.remoteBaseUrl) {
      const token = tokens.read('remote');
      endpoint = token ? { baseUrl: s.remoteBaseUrl, token } : null;
    } else endpoint = await startEmbedded();
    // Another server: event ids, and the sessions the tray knows, belong to the old one.
    const fresh = endpoint?.baseUrl !== before;
    if (fresh) live.sessions.clear();
    monitor?.restart({ fresh });
    for (const st of rendererStreams.values()) st.restart({ fresh });
    void seedLive();
  }

  function connectionInfo(): ConnectionInfo {
    const s = settings.get();
    const mode = envRemote || s.mode === 'remote' ? 'remote' : 'embedded';
    return {
      mode,
      baseUrl: endpoint?.baseUrl ?? s.remoteBaseUrl ?? '',
      hasToken: !!endpoint?.token,
      dataDir: mode === 'embedded' ? serverDir : undefined,
      tokenStorage: tokens.describe(),
    };
  }

  const api = new ApiClient(() => endpoint);
  await selectEndpoint();

  async function seedLive(): Promise<void> {
    const r = await api.listSessions({ status: 'active', limit: 500 });
    if (r.ok) live.seed(r.value.sessions);
    refreshTray();
  }

  // ---------------------------------------------------------------- IPC
  const send = (m: StreamMessage) => {
    if (win && !win.isDestroyed()) win.webContents.send('app:stream', m);
  };
  const handlers: Handlers = {
    connectionInfo: async () => ({ ok: true, value: connectionInfo() }),
    saveConnection: async (c) => {
      if (c.mode === 'remote') {
        if (!c.remoteBaseUrl || !/^https?:\/\//.test(c.remoteBaseUrl)) return fail(400, 'invalid_request', 'Enter an http(s) base URL.');
        if (c.remoteToken) tokens.write('remote', c.remoteToken);
        settings.update({ mode: 'remote', remoteBaseUrl: c.remoteBaseUrl.replace(/\/$/, '') });
      } else settings.update({ mode: 'embedded' });
      await selectEndpoint();
      return { ok: true, value: connectionInfo() };
    },
    serverInfo: () => api.serverInfo(),
    openApiDocument: () => api.openApi(),
    copyApiToken: async () => {
      if (!endpoint?.token) return fail(401, 'unauthorized', 'No token is configured.');
      clipboard.writeText(endpoint.token);
      return { ok: true, value: true };
    },
    listZones: () => api.zones(),
    listSessions: (q) => api.listSessions(q),
    getSession: (id) => api.getSession(id),
    createSession: (b) => api.createSession(b),
    sessionStatus: (id) => api.status(id),
    pauseSession: (id) => api.pause(id),
    resumeSession: (id) => api.resume(id),
    getLimits: (s) => api.getLimits(s),
    updateLimits: (s, b) => api.updateLimits(s, b),
    deleteLimits: (s) => api.deleteLimits(s),
    openStream: async (streamId, filter: EventFilter) => {
      // The window needs two or three at a time; a bound keeps a misbehaving page from
      // opening server connections without end.
      if (!rendererStreams.has(streamId) && rendererStreams.size >= MAX_RENDERER_STREAMS) {
        return fail(429, 'too_many_streams', `At most ${MAX_RENDERER_STREAMS} event streams may be open at once.`);
      }
      rendererStreams.get(streamId)?.close();
      rendererStreams.set(
        streamId,
        new EventStream({
          EventSource,
          endpoint: () => endpoint,
          filter,
          onEvent: (event) => send({ streamId, kind: 'event', event }),
          onState: (state, error) => send({ streamId, kind: 'state', state, error }),
        }),
      );
      return { ok: true, value: true };
    },
    closeStream: async (streamId) => {
      rendererStreams.get(streamId)?.close();
      rendererStreams.delete(streamId);
      return { ok: true, value: true };
    },
  };
  disposers.push(registerIpc(ipcMain, handlers, (frame) => isTrustedFrame(frame, RENDERER_INDEX)));

  // ---------------------------------------------------------------- window, tray, monitor
  hardenSession(electronSession.defaultSession);
  app.on('web-contents-created', (_e, contents: WebContents) => hardenContents(contents, RENDERER_INDEX));
  createWindow();

  const icon = (name: string) => nativeImage.createFromPath(join(ICONS, name));
  tray = new TrayController({
    createTray: (img) => new Tray(img),
    buildMenu: (items) => Menu.buildFromTemplate(items),
    icons: { idle: icon('tray-idle.png'), active: icon('tray-active.png') },
    open: () => showWindow(),
    openSession: (id) => showWindow(`#/sessions/${id}`),
    pause: (id) => void trayAction(api.pause(id), id),
    resume: (id) => void trayAction(api.resume(id), id),
    quit: () => {
      quitting = true;
      app.quit();
    },
  });
  async function trayAction(p: ReturnType<ApiClient['pause']>, id: string): Promise<void> {
    const r = await p;
    if (!r.ok) notify('Could not change the session', r.error.message);
    const s = await api.getSession(id);
    if (s.ok) live.put(s.value);
    refreshTray();
  }

  monitor = new EventStream({ EventSource, endpoint: () => endpoint, filter: {}, onEvent: (e) => void onMonitorEvent(api, e) });
  await seedLive();
}

function refreshTray(): void {
  tray?.update(live.active(), live.totals());
}

async function onMonitorEvent(api: ApiClient, e: SessionEvent): Promise<void> {
  // The stream first replays stored history (from id 0); only recent events move the tray
  // or raise notifications — the active-session listing is the truth at start.
  if (Date.now() - Date.parse(e.created_at) > 30_000) return;
  let s = live.apply(e);
  if (!s || e.event_type === 'session_start' || e.event_type === 'session_end') {
    const r = await api.getSession(e.session_id);
    if (r.ok) s = live.put(r.value);
  }
  if (e.event_type === 'session_end' && s) {
    if (s.status === 'ended') {
      const limits = await api.getLimits('session');
      const cap = limits.ok ? limits.value : null;
      const hit = cap && ((cap.downloaded_bytes !== undefined && s.downloaded >= cap.downloaded_bytes) || (cap.uploaded_bytes !== undefined && s.uploaded >= cap.uploaded_bytes));
      notify(hit ? 'Session reached its limit' : 'Session ended', `${s.client_id} in ${s.zone}${hit ? ': its byte limit is used up' : ''}.`);
    } else if (!s.paused) {
      notify('Session disconnected', `${s.client_id} in ${s.zone} has no open connection now.`);
    }
  }
  refreshTray();
}

function notify(title: string, body: string): void {
  if (Notification.isSupported()) new Notification({ title, body, silent: true }).show();
}

function createWindow(hash?: string): void {
  win = new BrowserWindow({
    width: 1200,
    height: 800,
    minWidth: 820,
    minHeight: 560,
    show: false,
    title: 'VPN Access Desk',
    autoHideMenuBar: true,
    backgroundColor: '#00000000',
    webPreferences: secureWebPreferences(PRELOAD),
  });
  win.once('ready-to-show', () => win?.show());
  // A reloaded or crashed page no longer listens to the streams it opened: close them, or
  // each reload would leave its event streams (and their server connections) running.
  const dropStreams = () => closeRendererStreams();
  win.webContents.on('did-start-navigation', (e) => {
    if (e.isMainFrame && !e.isSameDocument) dropStreams();
  });
  win.webContents.on('render-process-gone', dropStreams);
  win.webContents.on('destroyed', dropStreams);
  // Closing the window hides it to the tray; Quit (tray menu, or app quit) really quits.
  win.on('close', (e) => {
    if (!quitting) {
      e.preventDefault();
      win?.hide();
    }
  });
  // A new window starts on the asked-for route (a message sent before it loads would be lost).
  void win.loadFile(RENDERER_INDEX, hash ? { hash: hash.replace(/^#/, '') } : undefined);
}

function closeRendererStreams(): void {
  for (const s of rendererStreams.values()) s.close();
  rendererStreams.clear();
}

function showWindow(hash?: string): void {
  if (!win || win.isDestroyed()) createWindow(hash);
  else if (hash) win.webContents.send('app:navigate', hash);
  win!.show();
  win!.focus();
}

app.on('before-quit', () => {
  quitting = true;
});
app.on('window-all-closed', () => {
  /* stay in the tray */
});

let stopped = false;
app.on('will-quit', (e) => {
  if (stopped) return;
  e.preventDefault();
  stopped = true;
  void (async () => {
    monitor?.close();
    closeRendererStreams();
    tray?.destroy();
    for (const d of disposers.reverse()) await d();
    await server?.close().catch(() => {});
    app.exit(0);
  })();
});
