/** ISO 8601 UTC with milliseconds and `Z`, the one date-time format of the API. */
export function isoNow(): string {
  return new Date().toISOString();
}

/** Cuts a secret identifier (session id = VLESS credential) for logs. */
export function shortId(id: string): string {
  return id.length > 8 ? `${id.slice(0, 8)}…` : id;
}

/**
 * Replaces every UUID in a URL or text with its first 8 characters, and the whole secret of a
 * subscription URL (`/sub/<secret>`) with `…` (a part of it would narrow a guess).
 */
export function redactIds(text: string): string {
  return text
    .replace(/([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '$1…')
    .replace(/\/sub\/[^/?#\s"']+/g, '/sub/…');
}
