// A remote endpoint: from the environment (tests and support staff), or a base URL the renderer
// sent, checked before any token goes to it (http(s), no credentials in it, plain http only to this
// computer unless the person confirmed it).
import { isIP } from 'node:net';
import type { Endpoint } from './api-client.ts';

/** The remote endpoint the environment names, if both variables are set. */
export function endpointFromEnv(env: NodeJS.ProcessEnv): Endpoint | null {
  return env.VPN_ACCESS_REMOTE_URL && env.VPN_ACCESS_REMOTE_TOKEN ? { baseUrl: env.VPN_ACCESS_REMOTE_URL.replace(/\/$/, ''), token: env.VPN_ACCESS_REMOTE_TOKEN } : null;
}

/** This computer: `localhost` (and `*.localhost`), 127.0.0.0/8, ::1 (also IPv4-mapped). */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || /^::ffff:127\./.test(h) || /^::ffff:7f[0-9a-f]{2}:/.test(h);
  return false;
}

/**
 * Checks a remote base URL the renderer sent: http(s), no credentials in it, and plain http only
 * to this computer unless the user confirmed it. Returns the normalized URL or the refusal.
 */
export function checkRemoteUrl(raw: string | undefined, allowPlainHttp: boolean): { url: string } | { refusal: string } {
  let u: URL;
  try {
    u = new URL(raw ?? '');
  } catch {
    return { refusal: 'Enter an http(s) base URL.' };
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return { refusal: 'Enter an http(s) base URL.' };
  if (u.username || u.password) return { refusal: 'The base URL must not contain a user name or password: enter the API token in its own field.' };
  if (u.protocol === 'http:' && !isLoopbackHost(u.hostname) && !allowPlainHttp) {
    return {
      refusal: `Plain http to ${u.hostname} would send the API token unencrypted over the network. Use https (the server turns TLS on with --tls on), ` +
        'or confirm plain http explicitly on a network you trust.',
    };
  }
  u.hash = '';
  return { url: u.href.replace(/\/$/, '') };
}
