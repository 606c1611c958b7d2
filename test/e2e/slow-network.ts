// A slow network for the web project's specs: the browser holds back the requests of one method
// to one URL until the test lets them go, as a person on a poor link would see it. The test
// decides what happens while a request is on its way (typing, say), whatever the machine's load.
import type { Page } from '@playwright/test';

export interface Held {
  /** How many requests were held so far. */
  count: () => number;
  /** Lets every held request, and every later one, go on. */
  release: () => void;
}

/** Holds each `method` request to `url` until `release()`. */
export async function holdBack(page: Page, url: string, method: string): Promise<Held> {
  let count = 0;
  let release = () => {};
  const gate = new Promise<void>((open) => (release = open));
  await page.route(url, async (route) => {
    if (route.request().method() === method) {
      count++;
      await gate;
    }
    await route.continue();
  });
  return { count: () => count, release };
}
