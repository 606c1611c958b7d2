// The audit trail in the session timeline: a session created and paused in the
// window, then resumed by an agent token through the API, shows "created by", "paused by" and
// "resumed by" beside its traffic events, naming the role and the token's id (never the token);
// a change made elsewhere appears without reloading. Screenshots in light and dark.
import { test, expect } from './fixtures.ts';
import { picturesInBothSchemes } from './schemes.ts';

test('the session timeline says who created, paused and resumed it', async ({ app, backend, token }, testInfo) => {
  const page = app.page;
  await app.waitReady();
  const id = await app.createSession({ clientId: 'audit-timeline', reusable: true });
  const timeline = page.getByRole('list', { name: 'Session events' });
  await expect(timeline.locator('[data-audit-action="session.create"]')).toContainText('created by owner · token');

  await app.pauseButton().click();
  await expect(app.resumeButton()).toBeEnabled();
  await expect(timeline.locator('[data-audit-action="session.pause"]')).toContainText('paused by owner · token');

  // An agent resumes it through the API: the window shows it (the paused flag changes, the trail is read again).
  const agent = backend.newToken('agent');
  expect((await backend.api('PATCH', `/sessions/${id}/resume`, undefined, agent)).status).toBe(200);
  const resumed = timeline.locator('[data-audit-action="session.resume"]');
  await expect(resumed).toContainText('resumed by agent · token', { timeout: 15_000 });

  // The token ids shown are the ones the API records; the tokens themselves appear nowhere.
  const { body } = await backend.api<{ entries: Array<{ action: string; actor: { token_id: string } }> }>('GET', `/audit?session_id=${id}`);
  const agentId = body.entries.find((e) => e.action === 'session.resume')!.actor.token_id;
  await expect(resumed).toContainText(agentId.slice(0, 8));
  const text = (await timeline.textContent()) ?? '';
  expect(text).not.toContain(agent);
  expect(text).not.toContain(token);
  // Newest first: resumed, paused, created.
  const order = await timeline.locator('[data-audit-action]').evaluateAll((els) => els.map((e) => e.getAttribute('data-audit-action')));
  expect(order).toEqual(['session.resume', 'session.pause', 'session.create']);

  await timeline.scrollIntoViewIfNeeded();
  await picturesInBothSchemes(page, testInfo, 'timeline');
});
