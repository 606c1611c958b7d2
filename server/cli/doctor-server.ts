// The doctor's view of a running service: its listeners as serve's options set them, and what the
// service answers (with --url and --token: GET /v2/server-info, and its checks of its own setup from
// GET /v2/doctor; else its public OpenAPI document at the configured API port), with the answer's
// HTTP Date for the clock. 2 s per request (10 s for GET /v2/doctor, which probes in its turn).
import type { TlsFacts } from '../doctor/certificate.ts';
import type { PortSpec } from '../doctor/ports.ts';
import { type Check, messageOf, PROBE_TIMEOUT_MS } from '../doctor/report.ts';
import { requestFor } from '../outbound.ts';
import { isWildcardHost } from '../public-host.ts';
import type { ServeValues } from './serve.ts';
import { env, port } from './shared.ts';

/** What GET /v2/server-info says (the fields the doctor reads). */
export interface ServerInfoJson {
  version?: string;
  api_port: number;
  public_host: string;
  vless_tcp_port: number | null;
  proxy_port: number | null;
  tls: boolean;
  tls_status: { mode: string; enabled: boolean; reason: string; source: string | null; self_signed: boolean | null; fingerprint_sha256: string | null };
}

export interface ServerAnswer {
  ok: boolean;
  error?: string;
  version?: string;
  info?: ServerInfoJson;
  /** The HTTP Date header (null when absent), and when the request was sent and answered. */
  date?: string | null;
  sentAt: number;
  receivedAt: number;
}

/** The listeners serve's options (and environment) configure; `off` ones are left out. */
export function cliPorts(values: ServeValues, tls = false): PortSpec[] {
  const specs: (PortSpec | null)[] = [
    { id: 'api', name: 'API (and VLESS over ws)', option: '--port', port: port(values.port ?? env.VPN_ACCESS_PORT, 8787, '--port') ?? 8787, tls },
    { id: 'vless-tcp', name: 'VLESS TCP', option: '--vless-tcp-port', port: port(values['vless-tcp-port'] ?? env.VPN_ACCESS_VLESS_TCP_PORT, 8789, '--vless-tcp-port') ?? -1, tls },
    { id: 'proxy', name: 'Proxy', option: '--proxy-port', port: port(values['proxy-port'] ?? env.VPN_ACCESS_PROXY_PORT, 8788, '--proxy-port') ?? -1, tls },
  ];
  return specs.filter((s): s is PortSpec => s !== null && s.port >= 0);
}

/** One GET; TLS is not verified here (the TLS checks compare the certificate instead). */
async function get(url: string, token?: string, timeout = PROBE_TIMEOUT_MS): Promise<ServerAnswer & { body?: unknown }> {
  const send = await requestFor(url);
  const sentAt = Date.now();
  return new Promise((resolve) => {
    const done = (a: Omit<ServerAnswer, 'sentAt' | 'receivedAt'> & { body?: unknown }) => resolve({ ...a, sentAt, receivedAt: Date.now() });
    const req = send(url, { headers: token ? { authorization: `Bearer ${token}` } : {}, timeout, rejectUnauthorized: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c));
      res.on('end', () => {
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        const message = (body as { error?: { message?: string } } | undefined)?.error?.message;
        const ok = res.statusCode === 200 && body !== undefined;
        done({ ok, body, date: res.headers.date ?? null, error: ok ? undefined : `HTTP ${res.statusCode}${message ? `: ${message}` : ''}` });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeout / 1000} s`)));
    req.on('error', (err) => done({ ok: false, error: messageOf(err) }));
    req.end();
  });
}

/** Asks the service named by --url, else the one serve's options would run on this machine. */
export async function askServer(values: ServeValues & { url?: string; token?: string }, host: string, ports: PortSpec[], tls: boolean): Promise<{ answer: ServerAnswer | null; asked: string }> {
  if (values.url) {
    const origin = values.url.replace(/\/+$/, '').replace(/\/v2$/, '');
    const answer = await get(`${origin}/v2/server-info`, values.token);
    const info = answer.ok ? (answer.body as ServerInfoJson) : undefined;
    return { asked: origin, answer: { ...answer, info, version: typeof info?.version === 'string' ? clean(info.version) : undefined } };
  }
  const api = ports.find((p) => p.id === 'api');
  if (!api || api.port === 0) return { answer: null, asked: 'a port chosen at start (--port 0)' };
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  const at = isWildcardHost(host) ? '127.0.0.1' : bare.includes(':') ? `[${bare}]` : bare;
  const origin = `${tls ? 'https' : 'http'}://${at}:${api.port}`;
  const answer = await get(`${origin}/v2/openapi.json`);
  const doc = answer.body as { openapi?: string } | undefined;
  // Another program on the port is not the service, whatever it answers.
  const ours = answer.ok && typeof doc?.openapi === 'string';
  return { asked: origin, answer: ours ? answer : { ...answer, ok: false } };
}

/** GET /v2/doctor can take a few probe time-outs of its own (its ports, TLS handshakes, the database). */
const SERVER_DOCTOR_TIMEOUT_MS = 5 * PROBE_TIMEOUT_MS;

/**
 * The checks a service named with --url makes about its own setup (GET /v2/doctor, owner tokens):
 * only it knows its database, zone catalogue, egress policy and addresses; the error when refused.
 */
export async function askServerChecks(origin: string, token: string): Promise<{ checks: Check[] } | { error: string }> {
  const answer = await get(`${origin}/v2/doctor`, token, SERVER_DOCTOR_TIMEOUT_MS);
  const checks = (answer.body as { checks?: unknown } | undefined)?.checks;
  if (!answer.ok || !Array.isArray(checks)) return { error: answer.error ?? 'the answer has no checks' };
  return { checks: checks.filter(isCheck).map(printable) };
}

const STATUSES: readonly unknown[] = ['pass', 'warn', 'fail'];

/** A check as GET /v2/doctor writes it; anything else in the answer is left out. */
function isCheck(c: unknown): c is Check {
  const k = c as Record<string, unknown> | null;
  return typeof k === 'object' && k !== null && STATUSES.includes(k.status) && ['id', 'title', 'detail', 'fix'].every((f) => typeof k[f] === 'string');
}

/** A server's text without control characters: the terminal shows its words, never escape sequences. */
const clean = (t: string): string => t.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');

function printable(c: Check): Check {
  return { id: clean(c.id), title: clean(c.title), status: c.status, detail: clean(c.detail), fix: clean(c.fix) };
}

/** The public host, listeners and TLS a running service reports of itself. */
export function serverFacts(info: ServerInfoJson, configured: PortSpec[]): { publicHost: string; ports: PortSpec[]; tls: TlsFacts } {
  const named = (id: string) => configured.find((p) => p.id === id);
  const ports = [
    { ...named('api')!, port: info.api_port },
    ...(info.vless_tcp_port === null ? [] : [{ ...(named('vless-tcp') ?? { id: 'vless-tcp', name: 'VLESS TCP', option: '--vless-tcp-port' }), port: info.vless_tcp_port }]),
    ...(info.proxy_port === null ? [] : [{ ...(named('proxy') ?? { id: 'proxy', name: 'Proxy', option: '--proxy-port' }), port: info.proxy_port }]),
  ].map((p) => ({ ...p, tls: info.tls }));
  const s = info.tls_status;
  const tls: TlsFacts = { enabled: s.enabled, mode: s.mode, reason: s.reason, source: s.source, fingerprint: s.fingerprint_sha256, pin: s.self_signed ? s.fingerprint_sha256 : null };
  return { publicHost: info.public_host, ports, tls };
}
