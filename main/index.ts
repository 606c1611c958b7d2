// Composition root of the desktop app: it makes the parts, wires them together and, on quit,
// releases them through one DisposableStore (last made, first released). The parts, each in
// its own file: Endpoints (embedded server or remote, endpoint.ts), the API client, the IPC
// router and its handlers (ipc.ts, ipc-handlers.ts), the renderer's event streams
// (renderer-streams.ts), the window (window.ts), the tray (tray.ts) and the Notifier that
// watches the event stream for the tray and notifications (notifier.ts).
import { app, clipboard, dialog, ipcMain, Menu, nativeImage, safeStorage, session as electronSession, shell, Tray, type BrowserWindow, type MessageBoxOptions, type OpenDialogOptions, type WebContents } from 'electron';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ApiClient } from './api-client.ts';
import { AutoBackup } from './auto-backup.ts';
import { DataBackups, type BackupDialogs } from './backup.ts';
import { DisposableStore } from '../common/disposable-store.ts';
import { Endpoints } from './endpoint.ts';
import { endpointFromEnv } from './remote-url.ts';
import { registerIpc } from './ipc.ts';
import { createHandlers } from './ipc-handlers.ts';
import { Notifier } from './notifier.ts';
import { RendererStreams } from './renderer-streams.ts';
import { hardenContents, hardenSession, isTrustedFrame } from './security.ts';
import { SettingsFile } from './settings.ts';
import { TokenStore } from './token-store.ts';
import { TrayController } from './tray.ts';
import { AppWindow } from './window.ts';

const ROOT = join(__dirname, '..', '..'); // dist/main/index.cjs -> app root
const RENDERER_INDEX = join(ROOT, 'dist', 'renderer', 'index.html');
const PRELOAD = join(ROOT, 'dist', 'preload', 'index.cjs');
const ICONS = join(ROOT, 'build', 'icons');

const disposables = new DisposableStore();
let appWindow: AppWindow | null = null;

app.enableSandbox();
if (!app.requestSingleInstanceLock()) {
  app.quit();
} else {
  app.on('second-instance', () => appWindow?.show());
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

async function start(): Promise<void> {
  const userData = app.getPath('userData');
  mkdirSync(userData, { recursive: true });

  let notifier: Notifier | null = null;
  const streams = new RendererStreams(
    () => endpoints.current(),
    (m) => appWindow?.send('app:stream', m),
  );
  const settings = new SettingsFile(userData);
  const endpoints = disposables.add(
    new Endpoints({
      userData,
      settings,
      tokens: new TokenStore(userData, safeStorage),
      // Tests (and support staff) may aim the app at a remote server without touching settings.
      override: endpointFromEnv(process.env),
      onChange: (fresh) => {
        streams.restart(fresh);
        notifier?.restart(fresh);
      },
    }),
  );
  const api = new ApiClient(() => endpoints.current());
  await endpoints.select();

  const dialogs = nativeDialogs(() => appWindow?.browserWindow ?? null);
  const backups = new DataBackups({ endpoints, settings, dialogs, log: (line) => console.log(`backup: ${line}`) });
  const autoBackup = disposables.add(new AutoBackup({ endpoints, settings, backups, dialogs }));
  autoBackup.start();
  disposables.add(registerIpc(ipcMain, createHandlers({ api, endpoints, streams, clipboard, backups, autoBackup }), (frame) => isTrustedFrame(frame, RENDERER_INDEX)));

  hardenSession(electronSession.defaultSession, join(ROOT, 'dist', 'renderer'));
  app.on('web-contents-created', (_e, contents: WebContents) => hardenContents(contents, RENDERER_INDEX, (url) => void shell.openExternal(url)));
  appWindow = new AppWindow({ preload: PRELOAD, rendererIndex: RENDERER_INDEX, onPageGone: () => streams.closeAll() });

  const icon = (name: string) => nativeImage.createFromPath(join(ICONS, name));
  const tray = new TrayController({
    createTray: (img) => new Tray(img),
    buildMenu: (items) => Menu.buildFromTemplate(items),
    icons: { idle: icon('tray-idle.png'), active: icon('tray-active.png') },
    open: () => appWindow?.show(),
    openSession: (id) => appWindow?.show(`#/sessions/${id}`),
    pause: (id) => void notifier?.afterAction(api.pause(id), id),
    resume: (id) => void notifier?.afterAction(api.resume(id), id),
    quit: () => {
      appWindow?.allowClose();
      app.quit();
    },
  });
  disposables.add(() => tray.destroy());
  disposables.add(streams);
  notifier = disposables.add(new Notifier({ api, endpoint: () => endpoints.current(), render: (sessions, totals) => tray.update(sessions, totals) }));
  await notifier.seed();
}

/** Backup's folder choice and confirmation as Electron's dialogs, over the window when it is open. */
function nativeDialogs(parent: () => BrowserWindow | null): BackupDialogs {
  return {
    async chooseFolder({ title, buttonLabel, create }) {
      const options: OpenDialogOptions = { title, buttonLabel, properties: create ? ['openDirectory', 'createDirectory'] : ['openDirectory'] };
      const win = parent();
      const r = await (win ? dialog.showOpenDialog(win, options) : dialog.showOpenDialog(options));
      return r.canceled || !r.filePaths[0] ? null : r.filePaths[0];
    },
    async confirm({ message, detail, action }) {
      const options: MessageBoxOptions = { type: 'warning', message, detail, buttons: [action, 'Cancel'], defaultId: 1, cancelId: 1, noLink: true };
      const win = parent();
      return (await (win ? dialog.showMessageBox(win, options) : dialog.showMessageBox(options))).response === 0;
    },
  };
}

app.on('before-quit', () => {
  appWindow?.allowClose();
});
app.on('window-all-closed', () => {
  /* stay in the tray */
});

let stopped = false;
app.on('will-quit', (e) => {
  if (stopped) return;
  e.preventDefault();
  stopped = true;
  disposables
    .dispose()
    .catch((err: unknown) => console.error('while quitting', err))
    .finally(() => app.exit(0));
});
