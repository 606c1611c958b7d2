// What `vpn-access node run` is started with (server/cli/node.ts reads it from the command line).
import type { Logger } from '../domain.ts';

export interface NodeRunOptions {
  controls: string[];
  token: string;
  host: string;
  port: number;
  vlessTcpPort: number | null;
  proxyPort: number | null;
  egress: 'public-only' | 'lan' | 'allow-all';
  /** Source addresses of outbound connections (`--egress-address A,B`): the proxy's exits rotate over them. */
  egressAddresses?: string[];
  /** The geo relay listener's port (0: any free one; null: none, this node is no geo exit for others). */
  relayPort?: number | null;
  /**
   * TLS on the VLESS (ws and tcp) and proxy listeners: `on` or `off` (the CLI decides `auto`);
   * the certificate from the files when given (watched, reloaded), else a self-signed one kept in
   * `<data-dir>/tls/` and made for the node's public host once the control plane names it.
   */
  tls?: { mode: 'on' | 'off'; certFile?: string; keyFile?: string };
  dataDir: string;
  /** PEM CA certificate(s) trusted for an https/wss control URL (else the system's). */
  controlCa?: string;
  /**
   * The SHA-256 of the control plane's certificate (DER, 64 hex digits, as links' `pcs`): an
   * https/wss control URL is then trusted by this pin alone (a self-signed certificate works),
   * checked before anything, the node token included, is sent.
   */
  controlPin?: string;
  log: Logger;
}
