// Smoke test of the bundled main process where the Electron binary is missing: loads
// dist/main/index.cjs under Node with a small stand-in for the `electron` module, then
// drives it as the preload would (IPC from a trusted and an untrusted frame) and checks
// the embedded server, the token store, the tray menu and the IPC sender check.
//   node scripts/smoke-main.ts
import Module from 'node:module';
import { mkdtempSync, rmSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { EventEmitter } from 'node:events';
import assert from 'node:assert/strict';
import { createServer as netServer, type Socket } from 'node:net';
import WebSocket from 'ws';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const userData = mkdtempSync(join(tmpdir(), 'vad-smoke-'));
const handlers = new Map<string, (e: unknown, ...a: unknown[]) => Promise<unknown>>();
const sent: Array<[string, unknown]> = [];
let trayMenu: Array<{ label?: string; submenu?: Array<{ label?: string; click?: () => void }> }> = [];
let tooltip = '';
const readyCbs: Array<() => void> = [];
const appEvents = new EventEmitter();
let exited = false;

class FakeWebContents extends EventEmitter {
  send(ch: string, v: unknown) { sent.push([ch, v]); }
  setWindowOpenHandler() {}
}
class FakeWindow extends EventEmitter {
  webContents = new FakeWebContents();
  constructor() { super(); appEvents.emit('web-contents-created', {}, this.webContents); }
  loadFile(f: string) { this.file = f; return Promise.resolve(); }
  file = '';
  show() {} hide() {} focus() {} isDestroyed() { return false; }
}
const electron = {
  app: Object.assign(appEvents, {
    enableSandbox() {},
    requestSingleInstanceLock: () => true,
    whenReady: () => new Promise<void>((r) => readyCbs.push(r)),
    getPath: () => userData,
    quit() { appEvents.emit('before-quit'); appEvents.emit('will-quit', { preventDefault() {} }); },
    exit() { exited = true; },
  }),
  BrowserWindow: FakeWindow,
  ipcMain: { handle: (ch: string, fn: never) => handlers.set(ch, fn), removeHandler: (ch: string) => handlers.delete(ch) },
  Menu: { buildFromTemplate: (items: typeof trayMenu) => items },
  nativeImage: { createFromPath: (p: string) => ({ path: p }) },
  Notification: Object.assign(class { show() {} }, { isSupported: () => false }),
  safeStorage: { isEncryptionAvailable: () => false, encryptString: (s: string) => Buffer.from(s), decryptString: (b: Buffer) => b.toString() },
  session: { defaultSession: { setPermissionRequestHandler() {}, setPermissionCheckHandler() {}, webRequest: { onHeadersReceived() {}, onBeforeRequest() {} } } },
  Tray: class { setToolTip(t: string) { tooltip = t; } setImage() {} on() {} setContextMenu(m: typeof trayMenu) { trayMenu = m; } destroy() {} },
  clipboard: { writeText() {} },
};
const M = Module as unknown as { _load: (req: string, ...rest: unknown[]) => unknown };
const origLoad = M._load;
M._load = function (req: string, ...rest: unknown[]) {
  return req === 'electron' ? electron : origLoad.call(this, req, ...rest);
};

const requireCjs = Module.createRequire(import.meta.url);
requireCjs(join(ROOT, 'dist', 'main', 'index.cjs'));
readyCbs.forEach((r) => r());
const rendererUrl = pathToFileURL(join(ROOT, 'dist', 'renderer', 'index.html')).href;
const trusted = { senderFrame: { url: `${rendererUrl}#/sessions`, parent: null } };
const evil = { senderFrame: { url: 'https://evil.example/', parent: null } };
const call = async (op: string, ...a: unknown[]) => {
  for (let i = 0; i < 100 && !handlers.has(`app:${op}`); i++) await new Promise((r) => setTimeout(r, 50));
  return handlers.get(`app:${op}`)!(trusted, ...a) as Promise<{ ok: boolean; value: any; error: any }>;
};

try {
  const info = await call('connectionInfo');
  assert.equal(info.ok, true);
  assert.equal(info.value.mode, 'embedded');
  assert.equal(info.value.hasToken, true);
  console.log('embedded server:', info.value.baseUrl, '| token storage:', info.value.tokenStorage);
  const files = readdirSync(userData);
  assert.ok(files.includes('embedded.token'), 'token kept in userData');
  assert.equal(statSync(join(userData, 'embedded.token')).mode & 0o777, 0o600);
  assert.ok(!JSON.stringify(info).includes('vad_'), 'the token never crosses IPC');

  const zones = await call('listZones');
  assert.equal(zones.ok, true);
  const s = await call('createSession', { client_id: 'smoke', zone: zones.value.zones[0].code, reusable: true });
  assert.equal(s.ok, true, JSON.stringify(s));
  const bad = await call('createSession', { client_id: 'bad id', zone: 'de-fra' });
  assert.equal(bad.ok, false);
  assert.equal(bad.error.status, 400);
  const p = await call('pauseSession', s.value.id);
  assert.deepEqual(p.value, { session_id: s.value.id, paused: true });
  const refused = await handlers.get('app:listZones')!(evil) as { ok: boolean; error: { status: number } };
  assert.equal(refused.ok, false);
  assert.equal(refused.error.status, 403);
  const badArgs = await call('getLimits', 'everything');
  assert.equal(badArgs.error.status, 400);
  // Subscriptions and LAN sharing through the bundled main: the URL comes back, no bind is tried
  // (tests listen on loopback only), an address that is not this machine's is refused in words.
  const sub = await call('putSubscription', 'smoke');
  assert.equal(sub.ok, true, JSON.stringify(sub));
  assert.match(sub.value.url, /^http:\/\/127\.0\.0\.1:\d+\/sub\//);
  assert.equal((await call('getSubscription', 'smoke')).value.url, sub.value.url);
  assert.equal((await call('getSubscription', 'bad id')).error.status, 400);
  const lan = await call('lanSharing');
  assert.equal(lan.ok, true);
  assert.equal(lan.value.supported, true);
  assert.equal(lan.value.enabled, false);
  assert.ok(Array.isArray(lan.value.addresses));
  const notOurs = await call('setLanSharing', { enabled: true, address: '192.0.2.77' });
  assert.equal(notOurs.ok, false);
  assert.match(notOurs.error.message, /not an address of this computer/);
  assert.equal((await call('deleteSubscription', 'smoke')).ok, true);
  assert.equal((await call('getSubscription', 'smoke')).error.code, 'subscription_not_found');
  await call('openStream', 's1', {});
  await new Promise((r) => setTimeout(r, 1200));
  assert.ok(sent.some(([ch, m]) => ch === 'app:stream' && (m as { state?: string }).state === 'open'), 'stream opened');
  assert.ok(trayMenu.some((i) => i.label === 'Quit') && trayMenu.some((i) => i.label?.startsWith('Open')), 'tray menu has Open and Quit');
  // Tray: an active session appears in the menu with Pause; clicking it pauses the session.
  await call('resumeSession', s.value.id);
  const held: Socket[] = [];
  const sink = netServer((sock) => held.push(sock));
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const sinkPort = (sink.address() as { port: number }).port;
  const cfg = s.value.configuration;
  const ws = new WebSocket(`ws://${cfg.address}:${cfg.port}${cfg.path}`);
  await new Promise<void>((res, rej) => { ws.once('open', () => res()); ws.once('error', rej); });
  const port = Buffer.alloc(2);
  port.writeUInt16BE(sinkPort);
  ws.send(Buffer.concat([Buffer.from([0]), Buffer.from(cfg.id.replace(/-/g, ''), 'hex'), Buffer.from([0, 1]), port, Buffer.from([1, 127, 0, 0, 1]), Buffer.from('hi')]));
  const findItem = () => trayMenu.find((i) => i.label?.startsWith('smoke'));
  for (let i = 0; i < 50 && !findItem()?.submenu?.some((m) => m.label === 'Pause'); i++) await new Promise((r) => setTimeout(r, 100));
  const item = findItem();
  assert.ok(item, `tray menu lists the active session: ${JSON.stringify(trayMenu.map((i) => i.label))}`);
  assert.ok(tooltip.includes('1 active'), `tooltip shows the active session: ${tooltip}`);
  item.submenu!.find((m) => m.label === 'Pause')!.click!();
  let st = await call('sessionStatus', s.value.id);
  for (let i = 0; i < 50 && !st.value.paused; i++) {
    await new Promise((r) => setTimeout(r, 100));
    st = await call('sessionStatus', s.value.id);
  }
  assert.equal(st.value.paused, true, 'paused from the tray');
  for (let i = 0; i < 30 && !findItem()?.submenu?.some((m) => m.label === 'Resume'); i++) await new Promise((r) => setTimeout(r, 100));
  findItem()!.submenu!.find((m) => m.label === 'Resume')!.click!();
  for (let i = 0; i < 50 && st.value.paused; i++) {
    await new Promise((r) => setTimeout(r, 100));
    st = await call('sessionStatus', s.value.id);
  }
  assert.equal(st.value.paused, false, 'resumed from the tray');
  ws.close();
  held.forEach((h) => h.destroy());
  sink.close();
  console.log('tray:', JSON.stringify(tooltip), '| tray menu:', trayMenu.map((i) => i.label ?? '—').join(' / '));
  console.log('main-process smoke test passed: embedded server, token file 0600, IPC ops (subscriptions and LAN sharing too), sender check, argument check, event stream, tray menu with pause and resume');
} finally {
  electron.app.quit();
  for (let i = 0; i < 50 && !exited; i++) await new Promise((r) => setTimeout(r, 100));
  rmSync(userData, { recursive: true, force: true });
  process.exit(exited ? 0 : 1);
}
