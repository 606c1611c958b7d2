// The node's end of its channel to the control plane (/v2/node/channel, a WebSocket with the
// node token): connects, tries the control URLs in turn after a failure (or after 3 s without a
// word from the control plane: channel-silence.ts) and backs off once all were tried; an
// https/wss URL may be trusted by a pinned certificate alone. What the messages mean is decided
// by the caller (runNode): this file only carries them.
import { isIP } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import WebSocket from 'ws';
import type { Logger } from '../domain.ts';
import { NODE_CHANNEL_PATH, type NodeState } from '../cluster/node-channel.ts';
import { peerPin } from '../dataplane/relay-tls.ts';
import { CHANNEL_SILENT_MS, ChannelSilence, type ReadCounter } from '../cluster/channel-silence.ts';
import { ClockWatch } from './clock-watch.ts';

const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 5_000;
/** How often the node pings the control plane (its answer, or any message, is the control plane's life). */
const PING_MS = 500;

/** A message from the control plane, as parsed (its fields checked by whoever handles its type). */
export type ChannelMessage = { type?: string; seq?: number; hello?: boolean } & Partial<NodeState>;

/** What the node's parts see of the channel. */
export interface ChannelLink {
  /** The last socket opened and not yet closed. */
  readonly connected: boolean;
  /** A socket is there and open. */
  readonly open: boolean;
  /** Open, and the control plane said which seq it applied last (its hello ack): reports may go. */
  readonly ready: boolean;
  /** Sends one message on the current socket (the caller checked `open` or `ready`). */
  send(msg: object): void;
}

export interface ChannelOptions {
  controls: string[];
  token: string;
  /** PEM CA certificate(s) trusted for an https/wss control URL. */
  ca?: string;
  /** The control plane's certificate's SHA-256 (any case, colons allowed). */
  pin?: string;
  log: Logger;
  /** The first message on every new socket (the node's hello report). */
  hello(): object;
  onMessage(msg: ChannelMessage): void;
}

/**
 * A TLS connection to the control plane whose certificate has the pinned SHA-256, verified
 * before the caller sends a byte; rejects on another certificate, an error or a 5 s timeout.
 */
export function pinnedTls(url: URL, pin: string): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const s = tlsConnect({ host, port: Number(url.port || 443), ...(isIP(host) ? {} : { servername: host }), rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error('TLS handshake with the control plane timed out'));
    }, 5000);
    s.once('secureConnect', () => {
      clearTimeout(timer);
      const got = peerPin(s);
      if (got !== pin) {
        s.destroy();
        reject(new Error(`the control plane's certificate (sha256 ${got.slice(0, 16)}…) does not match --control-pin; nothing was sent`));
        return;
      }
      resolve(s);
    });
    s.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

function channelUrl(control: string): string {
  const u = new URL(control);
  if (u.protocol === 'http:') u.protocol = 'ws:';
  else if (u.protocol === 'https:') u.protocol = 'wss:';
  u.pathname = u.pathname.replace(/\/+$/, '') + NODE_CHANNEL_PATH;
  return u.toString();
}

/** The channel: connect, fail over, back off. */
export class ControlChannel implements ChannelLink {
  private ws: WebSocket | null = null;
  private isConnected = false;
  private greeted = false;
  private stopping = false;
  private attempt = 0;
  private backoff = BACKOFF_MIN_MS;
  private retry: NodeJS.Timeout | null = null;
  private readonly opts: ChannelOptions;
  private readonly pin: string | undefined;
  /** The control plane's pings carry its clock: this node's is compared with it (clock-watch.ts). */
  private readonly clock: ClockWatch;

  constructor(opts: ChannelOptions) {
    this.opts = opts;
    this.pin = opts.pin?.replace(/:/g, '').toLowerCase();
    this.clock = new ClockWatch(opts.log);
  }

  get connected(): boolean {
    return this.isConnected;
  }

  get open(): boolean {
    return !!this.ws && this.isConnected;
  }

  get ready(): boolean {
    return this.open && this.greeted;
  }

  send(msg: object): void {
    this.ws!.send(JSON.stringify(msg));
  }

  /** This node's clock less the control plane's, ms, to the second; null until known (clock-watch.ts). */
  clockSkew(): number | null {
    return this.clock.skew();
  }

  /** The control plane acknowledged the hello: reports may go from now on this socket. */
  greet(): void {
    this.greeted = true;
  }

  /** Stops reconnecting; false when the channel was already stopping. */
  stop(): boolean {
    if (this.stopping) return false;
    this.stopping = true;
    if (this.retry) clearTimeout(this.retry);
    return true;
  }

  /**
   * Closes the socket, if any, after a moment for the last report's ack (unless `now`). A node
   * that is stopping says so first (after its last report): the control plane takes it as down
   * at once instead of 10 s after its last contact.
   */
  async close(now: boolean): Promise<void> {
    if (!this.ws) return;
    const sock = this.ws;
    if (this.ready) this.send({ type: 'stopping' });
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 500);
      sock.once('close', () => {
        clearTimeout(t);
        resolve();
      });
      if (now) {
        clearTimeout(t);
        resolve();
      }
    });
    sock.close();
  }

  connect(): void {
    if (this.stopping) return;
    const url = channelUrl(this.opts.controls[this.attempt % this.opts.controls.length]);
    this.attempt++;
    const pin = this.pin;
    if (pin && url.startsWith('wss:')) {
      // The pin is checked on a TLS connection of our own before the upgrade (and the token) goes out.
      pinnedTls(new URL(url), pin).then(
        (tls) => this.openSocket(url, () => tls),
        (err: Error) => {
          this.opts.log.warn({ control: new URL(url).host, err: err.message }, 'the control plane could not be verified');
          this.scheduleRetry();
        },
      );
      return;
    }
    this.openSocket(url);
  }

  private scheduleRetry(): void {
    if (this.stopping) return;
    // Trying the next URL at once after a failure, then waiting once all were tried.
    const wait = this.attempt % this.opts.controls.length === 0 ? this.backoff : 0;
    if (wait) this.backoff = Math.min(BACKOFF_MAX_MS, this.backoff * 2);
    this.retry = setTimeout(() => this.connect(), wait);
  }

  private openSocket(url: string, createConnection?: () => TLSSocket): void {
    if (this.stopping) return;
    const { ca, log } = this.opts;
    const sock = new WebSocket(url, { headers: { authorization: `Bearer ${this.opts.token}` }, handshakeTimeout: 5000, ...(ca ? { ca } : {}), ...(createConnection ? { createConnection } : {}) });
    this.ws = sock;
    let pinger: NodeJS.Timeout | undefined;
    let socket: ReadCounter = {};
    sock.once('upgrade', (res) => (socket = res.socket));
    sock.on('open', () => {
      this.isConnected = true;
      this.greeted = false;
      this.backoff = BACKOFF_MIN_MS;
      log.info({ control: new URL(url).host }, 'connected to the control plane');
      sock.send(JSON.stringify(this.opts.hello()));
      // A control plane that hangs, or whose host is gone, closes nothing: its silence ends the socket.
      const silence = new ChannelSilence(PING_MS, socket);
      pinger = setInterval(() => {
        if (!silence.silent()) return sock.ping();
        clearInterval(pinger);
        log.warn({ control: new URL(url).host }, `the control plane sent nothing for ${CHANNEL_SILENT_MS / 1000} s (hung, or its host gone): connecting again`);
        sock.terminate();
      }, PING_MS).unref();
    });
    sock.on('ping', (payload) => this.clock.observe(payload));
    sock.on('message', (raw) => {
      let msg: ChannelMessage;
      try {
        msg = JSON.parse(String(raw));
      } catch {
        return;
      }
      this.opts.onMessage(msg);
    });
    sock.on('unexpected-response', (_req, res) => {
      log.warn({ control: new URL(url).host, status: res.statusCode }, 'the control plane refused the node channel');
      sock.terminate();
    });
    sock.on('error', (err) => log.warn({ control: new URL(url).host, err: err.message }, 'node channel error'));
    sock.on('close', () => {
      clearInterval(pinger);
      if (this.ws === sock) {
        this.ws = null;
        this.isConnected = false;
      }
      this.scheduleRetry();
    });
  }
}
