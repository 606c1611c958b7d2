// The framing of a proxied request's body (Content-Length or chunked): where it ends, so that
// no byte after it reaches the destination; ambiguous framing is refused (no smuggling).
import type { Head } from './proxy-head.ts';

/**
 * Where a request body ends: `take(b)` answers how many leading bytes of `b` still belong to
 * the body (so the rest is not forwarded); `done` once the body is complete; `error` when the
 * chunked framing is malformed.
 */
export class BodyEnd {
  done = false;
  error = false;
  private remaining: number;
  private state: 'size' | 'data' | 'data_crlf' | 'trailer' = 'size';
  private line = '';
  private readonly chunked: boolean;
  constructor(chunked: boolean, length: number) {
    this.chunked = chunked;
    this.remaining = chunked ? 0 : length;
    if (!chunked && length === 0) this.done = true;
  }

  take(b: Buffer): number {
    if (this.done || this.error) return 0;
    if (!this.chunked) {
      const n = Math.min(b.length, this.remaining);
      this.remaining -= n;
      if (this.remaining === 0) this.done = true;
      return n;
    }
    let i = 0;
    while (i < b.length && !this.done && !this.error) {
      if (this.state === 'data') {
        const n = Math.min(b.length - i, this.remaining);
        i += n;
        this.remaining -= n;
        if (this.remaining === 0) {
          this.state = 'data_crlf';
          this.line = '';
        }
        continue;
      }
      const c = b[i++];
      if (c !== 0x0a) {
        this.line += String.fromCharCode(c);
        if (this.line.length > 4096) this.error = true;
        continue;
      }
      if (!this.line.endsWith('\r')) { this.error = true; break; }
      const line = this.line.slice(0, -1);
      this.line = '';
      if (this.state === 'data_crlf') {
        if (line !== '') this.error = true;
        this.state = 'size';
      } else if (this.state === 'size') {
        const m = /^([0-9a-fA-F]{1,8})(?:[ \t]*;.*)?$/.exec(line);
        if (!m) { this.error = true; break; }
        this.remaining = parseInt(m[1], 16);
        this.state = this.remaining === 0 ? 'trailer' : 'data';
      } else if (line === '') {
        this.done = true;
      }
    }
    return i;
  }
}

/** The body framing of a request, or an error message (ambiguous framing is refused: no smuggling). */
export function bodyOf(head: Head): BodyEnd | string {
  const te = head.headers.filter(([k]) => k.toLowerCase() === 'transfer-encoding').map(([, v]) => v).join(',');
  const cls = head.headers.filter(([k]) => k.toLowerCase() === 'content-length').map(([, v]) => v);
  if (te) {
    if (cls.length > 0) return 'both Transfer-Encoding and Content-Length';
    const codings = te.split(',').map((t) => t.trim().toLowerCase()).filter(Boolean);
    if (codings.at(-1) !== 'chunked' || codings.filter((c) => c === 'chunked').length !== 1) return 'Transfer-Encoding must end with chunked';
    return new BodyEnd(true, 0);
  }
  if (cls.length > 0) {
    const values = new Set(cls.flatMap((v) => v.split(',').map((x) => x.trim())));
    const [v] = values;
    if (values.size !== 1 || !/^[0-9]{1,15}$/.test(v)) return 'invalid Content-Length';
    return new BodyEnd(false, Number(v));
  }
  return new BodyEnd(false, 0);
}
