// Subscription use cases: turn a client's subscription on, rotate, read, turn off, and render
// the feed a secret URL asks for. Links come only from server/links.ts (through the session
// view), so what links carry (TLS, pinning) reaches every format.
import { ApiError } from '../contract/errors.ts';
import { SUBSCRIPTION_FORMATS, type Subscription, type SubscriptionFormat } from '../contract/subscriptions.ts';
import { buildLink } from '../links.ts';
import type { SubscriptionData, SubscriptionRow } from '../store/repos/subscriptions.ts';
import type { SubscriptionSettingsPatch, SubscriptionSettingsRow } from '../store/repos/subscription-settings.ts';
import type { LinkSettings } from '../links.ts';
import type { SessionService } from '../sessions.ts';
import type { TlsCertificates } from '../tls/index.ts';
import { render, type RenderedSubscription, type SubscriptionEntry } from './formats.ts';
import { MissLimiter, type MissLimiterOptions } from './miss-limiter.ts';
import { SECRET_SHAPE, SubscriptionSecrets } from './secret.ts';
import { subscriptionPage } from './page.ts';
import { checkSettingsPatch, settingsHeaders } from './settings.ts';
import { DeviceService, refusalHeaders, type DeviceStore, type DeviceVerdict } from './devices.ts';
import { clientUsage, userinfoHeader, type ClientUsage, type UsageStore } from './userinfo.ts';

/** Hours between two polls, as clients read `profile-update-interval`. */
export const UPDATE_INTERVAL_HOURS = 12;

export interface SubscriptionFeed extends RenderedSubscription {
  headers: Record<string, string>;
}

/** What the subscription use cases read besides their own rows. */
export interface SubscriptionDeps {
  data: UsageStore & DeviceStore;
  sessions: Pick<SessionService, 'views'>;
  settings: { link: LinkSettings };
  tls: Pick<TlsCertificates, 'current'>;
  /** A zone's name for people ("Frankfurt"), when the catalogue has the zone. */
  zoneName?: (code: string) => string | undefined;
}

type SessionView = Awaited<ReturnType<SessionService['views']>>[number];

export class SubscriptionService {
  readonly store: SubscriptionData;
  readonly misses: MissLimiter;
  /** The devices that fetched each client's feed, and its max_devices (devices.ts). */
  readonly devices: DeviceService;
  private readonly ctx: SubscriptionDeps;
  private readonly loadKey: () => Promise<Buffer>;
  private secretsCache: Promise<SubscriptionSecrets> | undefined;

  /** `store`: the rows (subscriptions/index.ts picks them, and the key, by database). */
  constructor(ctx: SubscriptionDeps, store: SubscriptionData, loadKey: () => Promise<Buffer>, missLimit: Partial<MissLimiterOptions> = {}) {
    this.ctx = ctx;
    this.store = store;
    this.loadKey = loadKey;
    this.misses = new MissLimiter(missLimit);
    this.devices = new DeviceService(ctx.data);
  }

  /** The key is read (or made) on first use, not at start: servers without subscriptions never write it. */
  private secrets(): Promise<SubscriptionSecrets> {
    const made = (this.secretsCache ??= this.loadKey().then((key) => new SubscriptionSecrets(key)));
    made.catch(() => {
      if (this.secretsCache === made) this.secretsCache = undefined; // try again next time
    });
    return made;
  }

  /** scheme://public-host:api-port, where clients reach this server (known once it listens). */
  publicOrigin(): string {
    const link = this.ctx.settings.link;
    const host = link.publicHost.includes(':') && !link.publicHost.startsWith('[') ? `[${link.publicHost}]` : link.publicHost;
    return `${link.tls ? 'https' : 'http'}://${host}:${link.wsPort}`;
  }

  private async record(row: SubscriptionRow): Promise<Subscription> {
    const url = `${this.publicOrigin()}/sub/${(await this.secrets()).secretOf(row.nonce)}`;
    return {
      client_id: row.client_id,
      url,
      format_urls: Object.fromEntries(SUBSCRIPTION_FORMATS.map((f) => [f, `${url}?format=${f}`])) as Subscription['format_urls'],
      created_at: row.created_at,
      rotated_at: row.rotated_at,
    };
  }

  /** On, or a new URL when already on (the old secret stops working at once). */
  async enableOrRotate(customerId: string, clientId: string): Promise<Subscription> {
    const nonce = SubscriptionSecrets.newNonce();
    const row = await this.store.upsert(customerId, clientId, nonce, SubscriptionSecrets.hash((await this.secrets()).secretOf(nonce)));
    return this.record(row);
  }

  async get(customerId: string, clientId: string): Promise<Subscription> {
    const row = await this.store.get(customerId, clientId);
    if (!row) throw notFound(clientId);
    return this.record(row);
  }

  async disable(customerId: string, clientId: string): Promise<void> {
    if (!(await this.store.delete(customerId, clientId))) throw notFound(clientId);
  }

  /** What every feed and page of the customer carries besides the sessions (support link, web page, announcement). */
  settings(customerId: string): Promise<SubscriptionSettingsRow> {
    return this.store.getSubscriptionSettings(customerId);
  }

  /** Applies the owner's change (null clears a field); invalid_request for a value the schema cannot judge. */
  updateSettings(customerId: string, patch: SubscriptionSettingsPatch): Promise<SubscriptionSettingsRow> {
    checkSettingsPatch(patch);
    return this.store.patchSubscriptionSettings(customerId, patch);
  }

  /** The subscription a URL secret opens, or undefined (unknown, malformed or revoked). */
  async findBySecret(secret: string): Promise<SubscriptionRow | undefined> {
    if (!SECRET_SHAPE.test(secret)) return undefined;
    return this.store.findBySecretHash(SubscriptionSecrets.hash(secret));
  }

  /** The sessions that can carry traffic now: not ended, not paused, live status taken into account. */
  private async usable(row: SubscriptionRow): Promise<SessionView[]> {
    const views = await this.ctx.sessions.views(await this.store.usableSessions(row.customer_id, row.client_id));
    return views.filter((s) => s.status !== 'ended' && !s.paused);
  }

  /** One entry per usable session, named for people: the zone's name and the client ("Frankfurt · alice", then "… 2"). */
  entries(row: SubscriptionRow, views: SessionView[]): SubscriptionEntry[] {
    const seen = new Map<string, number>();
    return views.map((s) => {
      const base = `${this.ctx.zoneName?.(s.zone) ?? s.zone} · ${row.client_id}`;
      const n = (seen.get(base) ?? 0) + 1;
      seen.set(base, n);
      const name = n === 1 ? base : `${base} ${n}`;
      const pinned = 'pcs' in s.configuration && s.configuration.pcs ? this.ctx.tls.current?.cert : undefined;
      return { name, configuration: s.configuration, link: buildLink(s.configuration, name), ...(pinned ? { certificatePem: pinned } : {}) };
    });
  }

  private usage(row: SubscriptionRow, views: SessionView[], now: number): Promise<ClientUsage> {
    return clientUsage(this.ctx.data, row.customer_id, row.client_id, views.map((v) => v.expires_at ?? null), now);
  }

  /**
   * The feed the device verdict allows: the format's links (`x-hwid-active` while a device limit
   * is in force), or, refused, no links at all: 200, an empty text body, the `x-hwid-*` flags and
   * an `announce` that says why (devices.ts), as the apps that send `x-hwid` expect.
   */
  async feed(row: SubscriptionRow, format: SubscriptionFormat, verdict: DeviceVerdict = { serve: true, limited: false }): Promise<SubscriptionFeed> {
    const title = `VPN Access Desk: ${row.client_id}`;
    const views = await this.usable(row);
    const rendered: RenderedSubscription = verdict.serve
      ? await render(format, this.entries(row, views), title)
      : { body: '', contentType: 'text/plain; charset=utf-8', extension: 'txt' };
    const usage = await this.usage(row, views, Date.now());
    const settings = await this.settings(row.customer_id);
    const fileBase = `vpn-access-${row.client_id.replace(/[^A-Za-z0-9._-]/g, '_')}`;
    return {
      ...rendered,
      headers: {
        // The period in force: a monthly cap counts this month; total is the cap, expire when access ends.
        'subscription-userinfo': userinfoHeader(usage),
        'profile-update-interval': String(UPDATE_INTERVAL_HOURS),
        'profile-title': `base64:${Buffer.from(title, 'utf8').toString('base64')}`,
        ...(verdict.serve
          ? { 'content-disposition': `attachment; filename="${fileBase}.${rendered.extension}"; filename*=UTF-8''${encodeURIComponent(`${title}.${rendered.extension}`)}` }
          : {}),
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        // The owner's support link, web page and announcement, when set; a refusal's own announce replaces the owner's.
        ...settingsHeaders(settings),
        ...(verdict.serve ? (verdict.limited ? { 'x-hwid-active': 'true' } : {}) : refusalHeaders(verdict)),
      },
    };
  }

  /** The page a browser gets at the URL (`secretUrl`: the URL it opened, without a query). */
  async page(row: SubscriptionRow, secretUrl: string): Promise<string> {
    const views = await this.usable(row);
    const now = Date.now();
    const { announce, support_url } = await this.settings(row.customer_id);
    return subscriptionPage({
      clientId: row.client_id,
      title: `VPN Access Desk: ${row.client_id}`,
      baseUrl: secretUrl,
      usage: await this.usage(row, views, now),
      usable: views.length,
      now,
      announce,
      supportUrl: support_url,
    });
  }
}

function notFound(clientId: string): ApiError {
  return new ApiError('subscription_not_found', 'This client has no subscription (it is off).', { client_id: clientId });
}
