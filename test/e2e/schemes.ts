// Light and dark in one walk: a spec goes through its screens once and, at each place worth a
// look, takes its picture (or runs its axe check) in both themes, rather than walking every
// screen, making every session and moving every byte a second time for the dark pictures.
import type { Page, TestInfo } from '@playwright/test';

export type Scheme = 'light' | 'dark';

/** Runs `step` with the page light, then dark, and leaves the page light, even when a step fails. */
export async function inBothSchemes(page: Page, step: (scheme: Scheme) => Promise<void>): Promise<void> {
  try {
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      // The charts take their colours from a matchMedia listener: let React paint the change.
      await page.evaluate(() => new Promise<void>((done) => requestAnimationFrame(() => requestAnimationFrame(() => done()))));
      await step(scheme);
    }
  } finally {
    await page.emulateMedia({ colorScheme: 'light' });
  }
}

export interface Pictures {
  /** Asserted in each theme before its picture is taken. */
  check?: (scheme: Scheme) => Promise<void>;
  /** Takes the picture into `path`; the whole page by default. */
  take?: (path: string) => Promise<unknown>;
}

/**
 * A picture in light and one in dark, for a person to look at: `<scheme>-<what>.png` in the
 * test's output folder (spaces made dashes), attached to the report as `<scheme> <what>`.
 */
export async function picturesInBothSchemes(page: Page, testInfo: TestInfo, what: string, { check, take }: Pictures = {}): Promise<void> {
  await inBothSchemes(page, async (scheme) => {
    await check?.(scheme);
    const path = testInfo.outputPath(`${scheme}-${what.toLowerCase().replace(/[^a-z0-9.]+/g, '-')}.png`);
    await (take ? take(path) : page.screenshot({ path, fullPage: true }));
    await testInfo.attach(`${scheme} ${what}`, { path, contentType: 'image/png' });
  });
}
