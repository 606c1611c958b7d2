// ChannelSilence: a node channel is silent once its socket read nothing for CHANNEL_SILENT_MS across
// timely turns of the checking timer; any byte read starts the count again (a large frame arriving
// slowly is not silence), a late turn (this process was busy) is no evidence, and a socket that does
// not count what it reads is never taken as silent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChannelSilence, CHANNEL_SILENT_MS } from '../../server/cluster/channel-silence.ts';

const TURN = 250;

/** Turns of the timer from `from` to `to` (inclusive), each TURN apart; the last one's answer. */
function turns(s: ChannelSilence, from: number, to: number, each?: () => void): boolean {
  let silent = false;
  for (let t = from; t <= to; t += TURN) {
    each?.();
    silent = s.silent(t);
  }
  return silent;
}

test('silent after CHANNEL_SILENT_MS without a byte read, not before; a byte read starts the count again', () => {
  const socket = { bytesRead: 100 };
  const s = new ChannelSilence(TURN, socket, 0);
  assert.equal(turns(s, TURN, CHANNEL_SILENT_MS), false, 'at exactly CHANNEL_SILENT_MS: not yet');
  assert.equal(s.silent(CHANNEL_SILENT_MS + TURN), true);
  const h = new ChannelSilence(TURN, socket, 0);
  assert.equal(turns(h, TURN, 1750), false);
  socket.bytesRead += 1;
  assert.equal(turns(h, 2000, 2000 + CHANNEL_SILENT_MS), false, 'read at 2 s: silent only after 5 s');
  assert.equal(h.silent(2000 + CHANNEL_SILENT_MS + TURN), true);
});

test('a frame trickling in (a few bytes each turn) is not silence', () => {
  const socket = { bytesRead: 0 };
  const s = new ChannelSilence(TURN, socket, 0);
  assert.equal(turns(s, TURN, 20_000, () => (socket.bytesRead += 10)), false);
});

test('a late turn of the timer (the process was busy) is no evidence: the count starts again from it', () => {
  const s = new ChannelSilence(TURN, { bytesRead: 0 }, 0);
  assert.equal(turns(s, TURN, 1000), false);
  // The event loop was blocked for 5 s: what the peer sent may be waiting unread.
  assert.equal(s.silent(6000), false, 'a turn 5 s late');
  assert.equal(turns(s, 6250, 6000 + CHANNEL_SILENT_MS), false);
  assert.equal(s.silent(6000 + CHANNEL_SILENT_MS + TURN), true, 'silent after CHANNEL_SILENT_MS of timely turns');
});

test('a socket that does not count what it reads is never taken as silent', () => {
  const s = new ChannelSilence(TURN, {}, 0);
  assert.equal(turns(s, TURN, 20_000), false);
});
