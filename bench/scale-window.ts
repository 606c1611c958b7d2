// The window on a filled server (bench/scale.ts): Debian's Chromium opens the web UI (the same
// renderer as the desktop window) signed in, goes to Sessions and measures, in ms:
//  - open -> the first sessions listed (what a person waits for),
//  - open -> the newest sessions loaded (10,000 at most at once: older pages come on scrolling),
//  - scrolling at a fast fling for 2 s: the frame time p95 (60 Hz: 16.7 ms);
//  - then the Clients screen: from the click to every client listed (one per 10 sessions here).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { chromium, type Browser } from '@playwright/test';

const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
/** What the sessions list loads at once (renderer/src/store/slices/sessions.ts MAX_PAGES x PAGE). */
const LOADED_AT_ONCE = 10_000;

export const RENDERER_DIR = join(import.meta.dirname, '..', 'dist', 'renderer');

/** Chromium, with the renderer built; null (and why) when either is missing here. */
export async function openBrowser(): Promise<Browser | null> {
  const path = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(path)) {
    console.log(`window figures skipped: no Chromium at ${path}`);
    return null;
  }
  if (!existsSync(join(RENDERER_DIR, 'index.html'))) spawnSync('npm', ['run', '--silent', 'build:renderer'], { cwd: join(import.meta.dirname, '..'), stdio: 'inherit' });
  return chromium.launch({ executablePath: path, args: CHROMIUM_ARGS });
}

export async function windowFigures(browser: Browser, origin: string, token: string, sessions: number): Promise<Record<string, number>> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  try {
    await page.addInitScript((t) => localStorage.setItem('vpn-access.token', t), token);
    const t0 = performance.now();
    await page.goto(`${origin}/`);
    await page.getByRole('link', { name: 'Sessions', exact: true }).click();
    await page.getByTestId('session-scroller').getByRole('row').first().waitFor({ timeout: 60_000 });
    const first = performance.now() - t0;
    const want = String(Math.min(sessions, LOADED_AT_ONCE));
    await page.getByTestId('session-count').filter({ hasText: new RegExp(`^${want} session`) }).waitFor({ timeout: 120_000 });
    const loaded = performance.now() - t0;
    // (Page code is passed as text: this file is type-checked without the DOM library.)
    const frames = (await page.evaluate(`(async () => {
      const el = document.querySelector('[data-testid="session-scroller"]');
      const frames = [];
      let last = performance.now();
      const end = last + 2000;
      await new Promise((resolve) => {
        const step = (t) => {
          frames.push(t - last);
          last = t;
          el.scrollTop += 400;
          if (el.scrollTop + el.clientHeight >= el.scrollHeight - 1) el.scrollTop = 0;
          if (t < end) requestAnimationFrame(step);
          else resolve();
        };
        requestAnimationFrame(step);
      });
      return frames.slice(1);
    })()`)) as number[];
    frames.sort((a, b) => a - b);
    const c0 = performance.now();
    await page.getByRole('link', { name: 'Clients', exact: true }).click();
    await page.locator('.clients-table tbody tr').first().waitFor({ timeout: 60_000 });
    const clientsFirst = performance.now() - c0;
    return {
      'window: Clients screen, click -> clients listed (ms)': clientsFirst,
      'window: open -> first sessions listed (ms)': first,
      [`window: open -> newest ${LOADED_AT_ONCE / 1000}k (or all) loaded (ms)`]: loaded,
      'window: scroll frame p95 (ms)': frames[Math.floor(frames.length * 0.95)] ?? NaN,
    };
  } finally {
    await page.close();
  }
}
