// The request function of node:http or node:https for a URL, imported at its first use: Node 24's
// ESM view of node:http loads its WebSocket client (undici), a tenth of a `serve` start-up, which a
// server sending no webhook and a CLI command probing nothing should not pay.
import type { request } from 'node:https';

/** https.request's type covers both (http.request takes the same arguments, and ignores the TLS ones). */
export async function requestFor(url: string): Promise<typeof request> {
  return url.startsWith('https:') ? (await import('node:https')).request : (await import('node:http')).request;
}
