// What a screen must not do at any width: be wider than the window. Shared by the specs that
// assert it (phone layout, clients, proxy, support).
import type { Page } from '@playwright/test';

/** What is wider than the window: the document, the content area, or a control past the right edge. */
export function overflowOf(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const out: string[] = [];
    const de = document.documentElement;
    if (de.scrollWidth > de.clientWidth) out.push(`document ${de.scrollWidth} > ${de.clientWidth}`);
    const main = document.getElementById('content');
    if (main && main.scrollWidth > main.clientWidth) out.push(`#content ${main.scrollWidth} > ${main.clientWidth}`);
    for (const el of document.querySelectorAll<HTMLElement>('input, select, button, textarea, a.btn, [role="meter"]')) {
      const r = el.getBoundingClientRect();
      if (r.width > 0 && r.right > window.innerWidth + 0.5) {
        out.push(`${el.tagName.toLowerCase()} "${el.id || el.getAttribute('aria-label') || el.textContent?.trim().slice(0, 30)}" ends at ${Math.round(r.right)}`);
      }
    }
    return out;
  });
}
