// axe-core (the accessibility engine browsers' own audits use) against WCAG 2.1 A and AA: the
// violations on a page as it is now, one line each with the rule, its help text and the elements
// it found, so a failing check says what to fix.
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';

const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

export async function axeViolations(page: Page, where: string): Promise<string[]> {
  const result = await new AxeBuilder({ page }).withTags(TAGS).analyze();
  return result.violations.map(
    (v) => `${where}: ${v.id} (${v.impact}): ${v.help}: ${v.nodes.map((n) => `${n.target.join(' ')}${n.failureSummary ? ` [${n.failureSummary.replace(/\s+/g, ' ')}]` : ''}`).join('; ')}`,
  );
}
