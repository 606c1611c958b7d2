// Support reads across a cluster's control-plane instances (cluster/instance-ask.ts), one SQL text for
// both databases (a single SQLite process never uses them; the schema matches):
//   - control_instances: each instance marks itself seen every few seconds; those seen within the last
//     minute are asked, and named when they do not answer;
//   - the question is a NOTIFY on vad_support_ask (PostgreSQL only);
//   - support_answers: one row per request and answering instance (an answer can exceed NOTIFY's 8000
//     bytes), announced on vad_support_answers, read and deleted by the asker, swept after a minute unread.
import { CHANNELS } from '../sql/channels.ts';
import { all, allAs, dialect, run, runNotifying, tx, type Op } from '../sql/op.ts';

/** Marks the instance seen now (`at`: ISO time). */
function* seeInstance(instanceId: string, at: string): Op<void> {
  yield* run(
    'INSERT INTO control_instances (instance_id, seen_at) VALUES (?, ?) ON CONFLICT (instance_id) DO UPDATE SET seen_at = excluded.seen_at',
    instanceId,
    at,
  );
}

/** The instances seen at or after `since` (ISO time), by id. */
const instancesSeenSince = (since: string) =>
  allAs((r: { instance_id: string }) => r.instance_id, 'SELECT instance_id FROM control_instances WHERE seen_at >= ? ORDER BY instance_id', since);

/** Publishes a question to every other instance (PostgreSQL's NOTIFY; nothing on SQLite). */
function* askInstances(payload: string): Op<void> {
  if ((yield* dialect()) === 'postgres') yield* run('SELECT pg_notify(?, ?)', CHANNELS.supportAsk, payload);
}

/** Stores an instance's answer to a request and announces it on vad_support_answers (`request_id instance_id`). */
function* putSupportAnswer(requestId: string, instanceId: string, body: string, at: string): Op<void> {
  yield* runNotifying(
    { channel: CHANNELS.supportAnswers, expr: "request_id || ' ' || instance_id" },
    'INSERT INTO support_answers (request_id, instance_id, body, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (request_id, instance_id) DO NOTHING',
    requestId,
    instanceId,
    body,
    at,
  );
}

/** The answers to a request, each instance's body; deleted as they are read. */
const takeSupportAnswers = tx(function* (requestId: string): Op<Array<{ instance_id: string; body: string }>> {
  const rows = yield* all<{ instance_id: string; body: string }>(
    'SELECT instance_id, body FROM support_answers WHERE request_id = ? ORDER BY instance_id',
    requestId,
  );
  if (rows.length) yield* run('DELETE FROM support_answers WHERE request_id = ?', requestId);
  return rows;
});

/** Deletes answers nobody read, written before `answersBefore`, and instances last seen before `instancesBefore`. */
function* sweepSupport(answersBefore: string, instancesBefore: string): Op<number> {
  const answers = yield* run('DELETE FROM support_answers WHERE created_at < ?', answersBefore);
  const instances = yield* run('DELETE FROM control_instances WHERE seen_at < ?', instancesBefore);
  return answers + instances;
}

export const supportAnswerOps = { seeInstance, instancesSeenSince, askInstances, putSupportAnswer, takeSupportAnswers, sweepSupport };
