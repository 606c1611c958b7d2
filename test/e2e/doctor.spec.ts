// Settings → Doctor: Run the checks lists what GET /v2/doctor finds (the report of `vpn-access
// doctor --json`), each check with its badge in words, the finding, and the fix under warnings and
// failures, under a summary sentence; no WCAG 2.1 AA violation in the results (light and dark);
// an agent token is told in words that the checks are for owners.
import { test, expect } from './fixtures.ts';
import { axeViolationsInBothSchemes } from './axe.ts';

interface Check { id: string; status: 'pass' | 'warn' | 'fail'; title: string; detail: string; fix?: string }
interface Report { summary: { pass: number; warn: number; fail: number }; checks: Check[] }

const WORD = { pass: 'Pass', warn: 'Warning', fail: 'Fail' } as const;

test('Run the checks lists every check of the report with its badge, finding and fix', async ({ app, backend }) => {
  const { body: api } = await backend.api<Report>('GET', '/doctor');
  const page = app.page;
  await app.waitReady();
  await app.go('Settings');
  const card = page.getByRole('region', { name: 'Doctor' });
  await expect(card.getByTestId('doctor-summary')).toHaveCount(0);
  await card.getByRole('button', { name: 'Run the checks' }).click();
  const summary = card.getByTestId('doctor-summary');
  await expect(summary).toHaveText(/^\d+ passed, \d+ warnings?, \d+ failed: .+\.$/);
  // The same checks as the API's report, each in its words.
  for (const c of api.checks) {
    const row = card.getByTestId(`doctor-${c.id}`);
    await expect(row).toContainText(c.title);
    await expect(row.locator('.badge')).toHaveText(WORD[c.status]);
    if (c.status !== 'pass' && c.fix) await expect(row).toContainText(`Fix: ${c.fix}`);
    else await expect(row).not.toContainText('Fix:');
  }
  await expect(card.locator('[data-testid^="doctor-"]:not([data-testid="doctor-summary"])')).toHaveCount(api.checks.length);
  const { pass, warn, fail } = api.summary;
  expect(pass + warn + fail).toBe(api.checks.length);
  await expect(card.getByRole('button', { name: 'Run the checks again' })).toBeEnabled();
  const found = await axeViolationsInBothSchemes(page, 'doctor results');
  expect(found, found.join('\n')).toEqual([]);
});

test('an agent token is told that the checks are for owners', async ({ backend, openApp }, testInfo) => {
  test.skip(testInfo.project.name === 'electron', 'the electron project has one app, always on its owner token');
  const agent = await openApp({ backend, token: backend.newToken('agent') });
  await agent.waitReady();
  await agent.go('Settings');
  const card = agent.page.getByRole('region', { name: 'Doctor' });
  await card.getByRole('button', { name: 'Run the checks' }).click();
  await expect(card.getByRole('alert')).toContainText('This token is not allowed to do that: it needs an owner token.');
  await expect(card.getByTestId('doctor-summary')).toHaveCount(0);
});
