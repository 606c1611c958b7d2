// An event-stream follower as a long-lived client runs one: it reads GET /sessions/events of one
// instance, keeps every event id in arrival order, and whenever the stream ends (the instance was
// killed, restarted, or dropped a slow reader) connects again to the same URL with Last-Event-ID
// set to the last id it got. Each connection attempt's status is reported (`onAnswer`), so a
// test can hold it to the same rules as any other request. Bounded: it stops after `maxAttempts`
// connections or when stop() is called.
import { request as httpRequest, type ClientRequest } from 'node:http';

export interface StreamFollower {
  /** Event ids in the order they arrived, over every connection. */
  ids(): number[];
  /** Connections made (the first included). */
  connections(): number;
  stop(): void;
}

export function followEvents(
  url: string,
  token: string,
  opts: { onAnswer?: (status: number, ms: number) => void; retryMs?: number; maxAttempts?: number } = {},
): StreamFollower {
  const ids: number[] = [];
  let attempts = 0;
  let stopped = false;
  let current: ClientRequest | undefined;
  const retryMs = opts.retryMs ?? 250;
  const maxAttempts = opts.maxAttempts ?? 10_000;

  const connect = () => {
    if (stopped || attempts >= maxAttempts) return;
    attempts++;
    const headers: Record<string, string> = { accept: 'text/event-stream', authorization: `Bearer ${token}` };
    if (ids.length) headers['last-event-id'] = String(ids[ids.length - 1]);
    const t0 = performance.now();
    let again = false;
    let answered = false;
    const retry = () => {
      if (again) return;
      again = true;
      if (!stopped) setTimeout(connect, retryMs);
    };
    const req = httpRequest(url, { headers }, (res) => {
      answered = true;
      opts.onAnswer?.(res.statusCode ?? 0, performance.now() - t0);
      if (res.statusCode !== 200) {
        res.resume();
        res.on('end', retry);
        res.on('close', retry);
        return;
      }
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        let end: number;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const id = /^id: (\d+)$/m.exec(frame);
          if (id && /^data: /m.test(frame)) ids.push(Number(id[1]));
        }
      });
      res.on('end', retry);
      res.on('close', retry);
      res.on('error', retry);
    });
    req.on('error', () => {
      // refused, or reset once streaming: the instance is down for a moment
      if (!answered) opts.onAnswer?.(0, performance.now() - t0);
      retry();
    });
    req.end();
    current = req;
  };
  connect();
  return {
    ids: () => ids,
    connections: () => attempts,
    stop() {
      stopped = true;
      current?.destroy();
    },
  };
}
