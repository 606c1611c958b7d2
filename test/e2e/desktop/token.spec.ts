// The API token stays in the main process: after the window has done everything that
// touches the token (load, create, copy link, Settings, Copy API token), it is nowhere the
// renderer can reach — not in the page's JavaScript heap (a CDP heap snapshot), not in
// localStorage, sessionStorage, IndexedDB, cookies or the DOM, not in any IPC answer or
// message.
import type { Page } from '@playwright/test';
import { test, expect } from '../fixtures.ts';

async function heapSnapshot(page: Page): Promise<string> {
  const cdp = await page.context().newCDPSession(page);
  const chunks: string[] = [];
  cdp.on('HeapProfiler.addHeapSnapshotChunk', (e) => chunks.push(e.chunk));
  await cdp.send('HeapProfiler.enable');
  await cdp.send('HeapProfiler.collectGarbage');
  await cdp.send('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  await cdp.detach();
  return chunks.join('');
}

/** Everything the page keeps: storage of every kind, the DOM and the values of its fields. */
async function pageStorage(page: Page): Promise<string> {
  return page.evaluate(async () => {
    const out: unknown[] = [];
    for (const s of [localStorage, sessionStorage]) for (let i = 0; i < s.length; i++) out.push(s.key(i), s.getItem(s.key(i)!));
    out.push(document.cookie, document.documentElement.outerHTML);
    for (const el of document.querySelectorAll('input, textarea, select')) out.push((el as HTMLInputElement).value);
    for (const info of await indexedDB.databases()) {
      const db = await new Promise<IDBDatabase>((res, rej) => {
        const r = indexedDB.open(info.name!);
        r.onsuccess = () => res(r.result);
        r.onerror = () => rej(r.error);
      });
      for (const name of db.objectStoreNames) {
        const rows = await new Promise<unknown[]>((res) => {
          const r = db.transaction(name).objectStore(name).getAll();
          r.onsuccess = () => res(r.result);
        });
        out.push(name, rows);
      }
      db.close();
    }
    return JSON.stringify(out);
  });
}

test('the API token never reaches the renderer', async ({ app, backend, desktop, readClipboard }) => {
  const d = desktop!;
  const page = app.page;
  const token = backend.token;
  await app.waitReady();
  const id = await app.createSession({ clientId: 'token-watch', reusable: true });
  await page.getByRole('button', { name: 'Copy link' }).click();
  expect(await readClipboard()).toContain(`vless://${id}@`);
  await app.go('Settings');
  await expect(page.getByText(backend.baseUrl)).toBeVisible();
  // "Copy API token" is done by main, into the system clipboard, not through the page.
  const writes = d.state.clipboardWrites.length;
  await page.getByRole('button', { name: 'Copy API token' }).click();
  await expect.poll(() => d.state.clipboardWrites.length).toBe(writes + 1);
  expect(d.state.clipboardWrites.at(-1)).toBe(token);
  await app.go('Events');
  await app.go('Limits');
  await app.go('Sessions');
  await expect(page.getByRole('row', { name: /token-watch/ })).toBeVisible();

  const heap = await heapSnapshot(page);
  expect(heap).toContain('token-watch'); // the search sees what the page does hold
  expect(heap).toContain(backend.baseUrl);
  expect(heap.includes(token)).toBe(false);
  const stored = await pageStorage(page);
  expect(stored).toContain('token-watch');
  expect(stored.includes(token)).toBe(false);
  expect(JSON.stringify(await page.context().cookies())).not.toContain(token);
  // Nor did any IPC answer or main-to-window message carry it.
  const channels = new Set(d.state.invoked.map((i) => i.channel));
  for (const c of ['app:connectionInfo', 'app:listZones', 'app:createSession', 'app:copyApiToken', 'app:openStream', 'app:getLimits', 'app:serverInfo', 'app:listSessions']) expect(channels).toContain(c);
  expect(d.state.sent.length).toBeGreaterThan(0);
  expect(JSON.stringify(d.state.invoked).includes(token)).toBe(false);
  expect(JSON.stringify(d.state.sent).includes(token)).toBe(false);
});
