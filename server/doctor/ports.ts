// The listeners clients connect to: reachable at the public host when the service runs, free to
// bind when it does not. Each probe is one socket with a 2 s time-out.
import { X509Certificate } from 'node:crypto';
import { createConnection, createServer, isIP } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { type Check, fail, messageOf, pass, PROBE_TIMEOUT_MS, warn, within } from './report.ts';

export interface PortSpec {
  /** `api`, `vless-tcp`, `proxy` or `relay`. */
  id: string;
  /** The words of the check's title and of the option that sets it. */
  name: string;
  option: string;
  port: number;
  tls: boolean;
}

const bare = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

/** Resolves once a TCP connection to host:port is made (then closed). */
export function tcpReachable(host: string, port: number): Promise<void> {
  return within(new Promise<void>((resolve, reject) => {
    const socket = createConnection({ host: bare(host), port, timeout: PROBE_TIMEOUT_MS });
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('timeout', () => socket.destroy(new Error('connection timed out')));
    socket.once('error', reject);
  }), `connecting to ${host}:${port}`);
}

/** Resolves true when host:port can be bound now (it is released at once), false when it is taken. */
export function portFree(host: string, port: number): Promise<boolean> {
  return within(new Promise<boolean>((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(false) : reject(err)));
    server.listen({ host: bare(host), port, exclusive: true }, () => server.close(() => resolve(true)));
  }), `binding ${host}:${port}`);
}

/** The certificate a TLS listener at host:port serves (not verified: it is compared, not trusted). */
export function servedCertificate(host: string, port: number, servername: string): Promise<X509Certificate> {
  return within(new Promise<X509Certificate>((resolve, reject) => {
    const name = bare(servername);
    const socket = tlsConnect({ host: bare(host), port, servername: isIP(name) ? undefined : name, rejectUnauthorized: false, timeout: PROBE_TIMEOUT_MS });
    socket.once('secureConnect', () => {
      const cert = socket.getPeerX509Certificate();
      socket.destroy();
      if (cert) resolve(cert);
      else reject(new Error('no certificate was served'));
    });
    socket.once('timeout', () => socket.destroy(new Error('TLS handshake timed out')));
    socket.once('error', reject);
  }), `TLS to ${host}:${port}`);
}

/**
 * One check per listener. Running: a connection to public_host:port must succeed. Not running:
 * the port must be free on the bind address (taken by another process is a fail naming it).
 */
export async function portCheck(spec: PortSpec, at: { publicHost: string; bindHost: string; running: boolean }): Promise<Check> {
  const id = `port-${spec.id}`;
  const title = `${spec.name} port ${spec.port}`;
  const where = `${at.publicHost}:${spec.port}`;
  if (at.running) {
    try {
      await tcpReachable(at.publicHost, spec.port);
      return pass(id, title, `reachable at ${where}`);
    } catch (err) {
      return fail(id, title, `not reachable at ${where} (${messageOf(err)})`,
        `make sure serve listens on an address that reaches ${at.publicHost} (--host) and that no firewall or missing port forward blocks TCP ${spec.port}; or name the host clients can reach with --public-host`);
    }
  }
  if (spec.port === 0) return pass(id, title, 'port 0: a free port is chosen at start');
  try {
    if (await portFree(at.bindHost, spec.port)) {
      return pass(id, title, `free on ${at.bindHost} (the service is not running: serve can bind it; reachability is tested while it runs)`);
    }
    return fail(id, title, `port ${spec.port} is taken by another process on ${at.bindHost} while the service is not running`,
      `stop the process holding port ${spec.port} (ss -ltnp 'sport = :${spec.port}' names it) or choose another port with ${spec.option}`);
  } catch (err) {
    return warn(id, title, `could not test port ${spec.port} on ${at.bindHost}: ${messageOf(err)}`,
      `check that ${at.bindHost} is an address of this machine (--host)`);
  }
}
