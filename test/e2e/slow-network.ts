// A slow network for the web project's specs: the browser holds back each request of one method
// to one URL for a while before sending it on, as a person on a poor link would see it.
import type { Page } from '@playwright/test';

/** Holds each `method` request to `url` back `ms` before it goes on; returns how many were held so far. */
export async function holdBack(page: Page, url: string, method: string, ms: number): Promise<() => number> {
  let held = 0;
  await page.route(url, async (route) => {
    if (route.request().method() === method) {
      held++;
      await new Promise((r) => setTimeout(r, ms));
    }
    await route.continue();
  });
  return () => held;
}
