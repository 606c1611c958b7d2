// Main's defences, applied to what the stand-in carries: the IPC sender check sees the
// calling frame's real URL and parent, so a sub-frame or a foreign page is refused; bad
// argument shapes are refused before a handler runs and the server's own refusals cross
// IPC intact; the window cannot navigate away, reach the network or open new windows.
import { pathToFileURL } from 'node:url';
import { test, expect } from '../fixtures.ts';
import { IPC_BINDING } from './preload-shim.ts';

/** The preload's `window.app`, as far as these checks use it. */
type Answer = { ok: boolean; error?: { status: number; code: string; message: string } };
type Bridge = { app: { listZones(): Promise<Answer>; createSession(b: unknown): Promise<Answer> } };

test('main refuses IPC from a sub-frame, from a foreign page and with bad arguments', async ({ app, backend, desktop }) => {
  const d = desktop!;
  const page = app.page;
  await app.waitReady();
  // IPC_BINDING is the transport under ipcRenderer; below it is called the way a
  // compromised page would call it, bypassing the preload's bridge.

  // The app's own top frame is trusted, and its arguments are checked.
  const ok = await page.evaluate(() => (window as unknown as Bridge).app.listZones());
  expect(ok.ok).toBe(true);
  const badArgs = await page.evaluate(([b]) => (window as never as Record<string, (c: string, a: unknown[]) => Promise<{ ok: boolean; error: { status: number } }>>)[b]('app:getLimits', ['everything']), [IPC_BINDING]);
  expect(badArgs).toMatchObject({ ok: false, error: { status: 400, code: 'invalid_request' } });
  // The server's own refusal crosses IPC intact (status, code, message).
  const refused = await page.evaluate(() => (window as unknown as Bridge).app.createSession({ client_id: 'bad id', zone: 'de-fra' }));
  const direct = await backend.api<{ error: { code: string; message: string } }>('POST', '/sessions', { client_id: 'bad id', zone: 'de-fra' });
  expect(direct.status).toBe(400);
  expect(refused).toMatchObject({ ok: false, error: { status: 400, code: direct.body.error.code, message: direct.body.error.message } });

  // A sub-frame of the app's window: no preload bridge there, and its raw IPC is refused.
  await page.evaluate(() => {
    const f = document.createElement('iframe');
    f.name = 'intruder';
    f.srcdoc = '<p>intruder</p>';
    document.body.append(f);
  });
  const frame = await expect.poll(() => page.frame({ name: 'intruder' })?.url()).toBe('about:srcdoc').then(() => page.frame({ name: 'intruder' })!);
  expect(await frame.evaluate(() => typeof (window as { app?: unknown }).app)).toBe('undefined');
  const fromFrame = await frame.evaluate(([b]) => (window as never as Record<string, (c: string, a: unknown[]) => Promise<unknown>>)[b]('app:listZones', []), [IPC_BINDING]);
  expect(fromFrame).toMatchObject({ ok: false, error: { status: 403, code: 'forbidden' } });
  expect(d.state.invoked.at(-1)).toMatchObject({ channel: 'app:listZones', frameUrl: 'about:srcdoc' });
  await page.evaluate(() => document.querySelector('iframe[name="intruder"]')?.remove());

  // The window taken to a foreign page (the preload runs there too, as in Electron): refused.
  const foreign = 'data:text/html,<title>foreign</title><p>foreign</p>';
  await page.goto(foreign);
  expect(await page.evaluate(() => typeof (window as { app?: unknown }).app)).toBe('object');
  const fromForeign = await page.evaluate(() => (window as unknown as Bridge).app.listZones());
  expect(fromForeign).toMatchObject({ ok: false, error: { status: 403, code: 'forbidden' } });
  expect(d.state.invoked.at(-1)?.frameUrl.startsWith('data:')).toBe(true);

  // Back on the app's own file: trusted again.
  await page.goto(pathToFileURL(d.window.loadedFile).href);
  await app.waitReady();
  expect((await page.evaluate(() => (window as unknown as Bridge).app.listZones())).ok).toBe(true);
});

test('the window cannot navigate away, reach the network or open windows', async ({ app, backend, desktop }) => {
  const d = desktop!;
  const page = app.page;
  await app.waitReady();
  const own = page.url().split('#')[0];
  // A navigation the page starts: main's will-navigate prevents it.
  await page.evaluate((u) => void (location.href = u), backend.origin + '/');
  await expect.poll(() => d.state.blockedNavigations).toContain(backend.origin + '/');
  await page.waitForTimeout(300);
  expect(page.url().split('#')[0]).toBe(own);
  await app.go('Sessions');
  // A request to the network fails (the API is main's job): the page's CSP stops it first,
  // and main's onBeforeRequest (forwarded to every request that gets past it) would cancel it.
  const fetched = await page.evaluate((u) => fetch(u).then(() => 'answered', (e: Error) => `failed: ${e.message}`), backend.baseUrl + '/zones');
  expect(fetched).toMatch(/^failed/);
  const decide = (url: string) => new Promise<boolean | undefined>((r) => d.state.beforeRequest!({ url }, (x) => r(x.cancel)));
  expect(await decide(backend.baseUrl + '/zones')).toBe(true);
  expect(await decide(own)).toBe(false);
  // Files: the renderer's own folder only, not the rest of the disk (main's bundle, /etc/passwd).
  expect(await decide(new URL('assets/x.js', own).href)).toBe(false);
  expect(await decide(new URL('../main/index.cjs', own).href)).toBe(true);
  expect(await decide('file:///etc/passwd')).toBe(true);
  const readPasswd = await page.evaluate(() => fetch('file:///etc/passwd').then(() => 'read', (e: Error) => `failed: ${e.message}`));
  expect(readPasswd).toMatch(/^failed/);
  // A new window: main's window-open handler denies it.
  const denied = d.state.deniedWindows.length;
  await page.evaluate(() => void window.open('about:blank', '_blank'));
  await expect.poll(() => d.state.deniedWindows.length).toBe(denied + 1);
  await expect.poll(() => page.context().pages().length).toBe(1); // the popup is closed
});
