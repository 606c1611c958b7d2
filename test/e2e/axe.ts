// axe-core (the accessibility engine browsers' own audits use) against WCAG 2.1 A and AA: the
// violations on a page as it is now, one line each with the rule, its help text and the elements
// it found, so a failing check says what to fix.
//
// axe's script is evaluated into a document once (as a DevTools evaluation, which the renderer's
// Content-Security-Policy does not apply to) and run there for each check: the app changes screens
// without loading another document, so one script serves every screen. Evaluating the 600 KB
// script again for each check took about 1.5 s of a check's 1.6 s on this machine. Only violations
// are gathered (resultTypes): the passes' and inapplicable rules' element lists are never read.
import axe from 'axe-core';
import type { Page } from '@playwright/test';
import { inBothSchemes } from './schemes.ts';

const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

type AxeWindow = Window & { axe?: typeof axe };

export async function axeViolations(page: Page, where: string): Promise<string[]> {
  if (!(await page.evaluate(() => typeof (window as AxeWindow).axe?.run === 'function'))) await page.evaluate(axe.source);
  const result = await page.evaluate(
    (tags) => (window as AxeWindow).axe!.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] }),
    TAGS,
  );
  return result.violations.map(
    (v) => `${where}: ${v.id} (${v.impact}): ${v.help}: ${v.nodes.map((n) => `${n.target.join(' ')}${n.failureSummary ? ` [${n.failureSummary.replace(/\s+/g, ' ')}]` : ''}`).join('; ')}`,
  );
}

/** The violations on the page as it is now, in light and in dark (each line says which). */
export async function axeViolationsInBothSchemes(page: Page, where: string): Promise<string[]> {
  const found: string[] = [];
  await inBothSchemes(page, async (scheme) => void found.push(...(await axeViolations(page, `${scheme} ${where}`))));
  return found;
}
