// A raw Server-Sent Events reader over node:http, for tests that look at the bytes on the wire.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { EventSource } from 'eventsource';
import type { SessionEvent } from '../../server/contract/schemas.ts';

export interface RawStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** Everything received so far. */
  text(): string;
  /** Complete frames (blocks ending in a blank line) received so far. */
  frames(): string[];
  /** The id of the last complete event frame received so far (cheap: reads the tail only). */
  lastId(): number | undefined;
  /** The events (frames with data:) received so far, parsed. */
  events(): SessionEvent[];
  ended: Promise<void>;
  close(): void;
}

export function openRaw(url: string, headers: Record<string, string> = {}): Promise<RawStream> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        buf += c;
      });
      const ended = new Promise<void>((r) => {
        res.on('end', r);
        res.on('close', r);
        res.on('error', () => r());
      });
      const frames = () => {
        const parts = buf.split('\n\n');
        parts.pop(); // incomplete tail
        return parts;
      };
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        text: () => buf,
        frames,
        events: () =>
          frames()
            .map((f) => f.split('\n').find((l) => l.startsWith('data: ')))
            .filter((l): l is string => l !== undefined)
            .map((l) => JSON.parse(l.slice(6)) as SessionEvent)
            .filter((e) => typeof e.id === 'number'),
        lastId: () => {
          const end = buf.lastIndexOf('\n\n');
          if (end < 0) return undefined;
          let at = buf.lastIndexOf('id: ', end);
          while (at > 0 && buf[at - 1] !== '\n') at = buf.lastIndexOf('id: ', at - 1);
          if (at < 0) return undefined;
          const m = /^id: (\d+)\n/.exec(buf.slice(at, at + 40));
          return m ? Number(m[1]) : undefined;
        },
        ended,
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** An `eventsource` client that sends the token in the Authorization header. */
export function eventSource(url: string, token: string): EventSource {
  return new EventSource(url, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${token}` } }),
  });
}
