// The sentences the app shows for API errors (renderer/src/lib/errors.ts): a refusal of an agent
// token says what needs the owner token, in the words of the thing the server named, and never
// names limits for a route that is not about limits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { humanError } from '../../renderer/src/lib/errors.ts';

const forbidden = (details: Record<string, unknown>) => ({ status: 403, code: 'forbidden', message: 'This token may not use this route; an owner token is required.', details });

test('forbidden: what needs an owner token, as the server names it', () => {
  assert.equal(humanError(forbidden({ role: 'agent', resource: 'webhooks' })), 'This token is not allowed to do that: webhooks can only be managed with an owner token.');
  assert.equal(humanError(forbidden({ role: 'agent', resource: 'limits' })), 'This token is not allowed to do that: limits can only be managed with an owner token.');
  // A route as a whole (the doctor report): no kind of thing named, and no word of limits.
  assert.equal(humanError(forbidden({ role: 'agent' })), 'This token is not allowed to do that: it needs an owner token.');
});
