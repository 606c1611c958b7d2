// HTTP/1.1 heads as the proxy reads and rewrites them: the request head, its headers, the
// end-to-end headers that are forwarded, and the destination's answer head rewritten on its way
// to the client.
import type { OnData } from './outbound.ts';

const MAX_RESPONSE_HEAD = 64 * 1024;
/** Hop-by-hop headers (RFC 9110 7.6.1 and the proxy ones): never forwarded, either way. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'upgrade']);
/** Framing headers stay whatever a Connection header lists (the body is relayed as framed). */
const FRAMING = new Set(['content-length', 'transfer-encoding', 'host']);

export interface Head {
  method: string;
  target: string;
  version: string;
  headers: [string, string][];
}

/** A header block's lines after the first; undefined when one is malformed (no obs-fold, no bare CR/LF/NUL). */
export function parseHeaders(lines: string[]): [string, string][] | undefined {
  const headers: [string, string][] = [];
  for (const line of lines) {
    if (line === '') continue;
    const i = line.indexOf(':');
    if (i <= 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(line.slice(0, i)) || /[\r\n\0]/.test(line)) return undefined;
    headers.push([line.slice(0, i), line.slice(i + 1).trim()]);
  }
  return headers;
}

export function parseHead(text: string): Head | undefined {
  const lines = text.split('\r\n');
  const m = /^([A-Z]{1,16}) (\S{1,8192}) (HTTP\/1\.[01])$/.exec(lines[0] ?? '');
  if (!m) return undefined;
  const headers = parseHeaders(lines.slice(1));
  return headers && { method: m[1], target: m[2], version: m[3], headers };
}

export function header(h: { headers: [string, string][] }, name: string): string | undefined {
  const n = name.toLowerCase();
  return h.headers.find(([k]) => k.toLowerCase() === n)?.[1];
}

/** The headers to forward: hop-by-hop ones, and those a Connection header names, removed. */
export function endToEnd(headers: [string, string][]): [string, string][] {
  const named = new Set<string>();
  for (const [k, v] of headers) {
    if (k.toLowerCase() !== 'connection') continue;
    for (const t of v.split(',')) if (t.trim()) named.add(t.trim().toLowerCase());
  }
  for (const f of FRAMING) named.delete(f);
  return headers.filter(([k]) => !HOP_BY_HOP.has(k.toLowerCase()) && !named.has(k.toLowerCase()));
}

/**
 * Rewrites the head of a destination's answer (and passes interim 1xx heads through): the
 * hop-by-hop headers go, `Connection: close` is announced, and the `extra` header lines of the
 * proxy's own (X-Proxy-Session-Moved) are added to the final head. A head that already is exactly
 * that is passed on byte for byte. Bytes after the final head pass through untouched.
 */
export function answerRewriter(push: OnData, fail: () => void, extra: readonly string[] = []): OnData {
  let head: Buffer | undefined = Buffer.alloc(0);
  return (b, release) => {
    if (!head) return push(b, release);
    head = Buffer.concat([head, b]);
    release(); // copied
    const out: Buffer[] = [];
    for (;;) {
      const end: number = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > MAX_RESPONSE_HEAD) fail();
        break;
      }
      const text = head.subarray(0, end).toString('latin1');
      const lines = text.split('\r\n');
      const status = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(lines[0]);
      const headers = parseHeaders(lines.slice(1));
      if (!status || !headers) {
        fail();
        return;
      }
      const rest: Buffer = head.subarray(end + 4);
      const code = Number(status[1]);
      if (code >= 100 && code < 200 && code !== 101) {
        out.push(head.subarray(0, end + 4));
        head = rest;
        continue;
      }
      const hop = headers.filter(([k]) => HOP_BY_HOP.has(k.toLowerCase()));
      const clean = hop.length === 1 && hop[0][0].toLowerCase() === 'connection' && hop[0][1].toLowerCase() === 'close';
      if (clean && !extra.length) out.push(head.subarray(0, end + 4));
      else {
        const kept = endToEnd(headers).map(([k, v]) => `${k}: ${v}`);
        out.push(Buffer.from([lines[0], ...kept, ...extra, 'Connection: close', '', ''].join('\r\n'), 'latin1'));
      }
      if (rest.length) out.push(rest);
      head = undefined;
      break;
    }
    if (out.length) push(Buffer.concat(out), () => {});
  };
}
