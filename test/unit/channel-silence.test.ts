// ChannelSilence: a node channel is silent once nothing came for CHANNEL_SILENT_MS across timely
// turns of the checking timer; anything heard starts the count again, and a late turn (this
// process was busy) is no evidence.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChannelSilence, CHANNEL_SILENT_MS } from '../../server/cluster/channel-silence.ts';

const TURN = 250;

/** Turns of the timer from `from` to `to` (inclusive), each TURN apart; the last one's answer. */
function turns(s: ChannelSilence, from: number, to: number): boolean {
  let silent = false;
  for (let t = from; t <= to; t += TURN) silent = s.silent(t);
  return silent;
}

test('silent after CHANNEL_SILENT_MS without a message, not before; a message starts the count again', () => {
  const s = new ChannelSilence(TURN, 0);
  assert.equal(turns(s, TURN, CHANNEL_SILENT_MS), false, 'at exactly CHANNEL_SILENT_MS: not yet');
  assert.equal(s.silent(CHANNEL_SILENT_MS + TURN), true);
  const h = new ChannelSilence(TURN, 0);
  assert.equal(turns(h, TURN, 2000), false);
  h.heard(2000);
  assert.equal(turns(h, 2250, 2000 + CHANNEL_SILENT_MS), false, 'heard at 2 s: silent only after 5 s');
  assert.equal(h.silent(2000 + CHANNEL_SILENT_MS + TURN), true);
});

test('a late turn of the timer (the process was busy) is no evidence: the count starts again from it', () => {
  const s = new ChannelSilence(TURN, 0);
  assert.equal(turns(s, TURN, 1000), false);
  // The event loop was blocked for 5 s: the node's reports may be waiting unread.
  assert.equal(s.silent(6000), false, 'a turn 5 s late');
  assert.equal(turns(s, 6250, 6000 + CHANNEL_SILENT_MS), false);
  assert.equal(s.silent(6000 + CHANNEL_SILENT_MS + TURN), true, 'silent after CHANNEL_SILENT_MS of timely turns');
});
