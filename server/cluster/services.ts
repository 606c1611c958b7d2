// The services of a `serve` process on the PostgreSQL control plane (`--database URL`): the
// same Services the routes get on SQLite (server/services.ts), built on PgStore. Several
// processes may share one database and any of them answers any request:
//   - data: PgStore behind the async seam (every write committed before it is acknowledged);
//   - events: PgEventFeed, every event of the customer from whichever instance, once, in id order;
//   - tokenLookup: PgTokenCache, dropped on every instance by the vad_tokens notification;
//   - the local data plane reads the LocalView (cluster/local-view.ts): sessions loaded before
//     admission, pause and limit changes pushed by vad_sessions / vad_limits, counters added;
//   - one LISTEN connection (PgListener) carries the notifications to all of these.
// Loaded only when `database` is given, so the SQLite mode never loads the PostgreSQL client.
import { ServeGeoRoutes } from './geo.ts';
import type { SessionEvent } from '../contract/schemas.ts';
import type { EventInput } from '../domain.ts';
import { PgEventFeed } from '../events/pg-feed.ts';
import type { ResolvedConfig, ServerOptions } from '../http/config.ts';
import { silentLogger } from '../log.ts';
import { buildDataPlane, buildUsageHistory, cappedToWebhooks, instanceMetrics, type Services, StreamRegistry } from '../services.ts';
import { Metrics, timedStore } from '../metrics.ts';
import { AuditTrail } from '../audit/trail.ts';
import { SessionService } from '../sessions.ts';
import { pgControlStore } from '../store/control.ts';
import { PgListener } from '../store/pg/listener.ts';
import { CHANNELS, PgStore } from '../store/pg/store.ts';
import { PgTokenCache } from '../store/pg/token-cache.ts';
import type { TlsCertificates } from '../tls/index.ts';
import { ZoneCatalogue } from '../zones/catalogue.ts';
import { ZonePlacement } from './placement.ts';
import { LocalView } from './local-view.ts';
import { CounterJournal } from './journal.ts';
import { join } from 'node:path';
import { clusterSignals } from './node-channel.ts';

/** How long a start waits for the LISTEN connection before serving anyway (it keeps retrying). */
const LISTEN_WAIT_MS = 5_000;

export async function createClusterServices(opts: ServerOptions, config: ResolvedConfig, tls: TlsCertificates, url: string): Promise<Services> {
  const log = opts.logger ?? silentLogger;
  // Migrations run here, under an advisory lock: several instances may start at once.
  const metrics = new Metrics();
  const data = timedStore(
    pgControlStore(
      await PgStore.open(url, {
        applicationName: 'vpn-access serve',
        onIdleError: (err) => log.warn({ err: err.message }, 'database connection lost'),
      }),
    ),
    metrics,
  );
  const listener = new PgListener(url, Object.values(CHANNELS), {
    applicationName: 'vpn-access listen',
    onError: (err) => log.warn({ err: err.message }, 'database notifications interrupted; reconnecting'),
  });
  let waited: NodeJS.Timeout | undefined;
  await Promise.race([listener.ready, new Promise<void>((resolve) => (waited = setTimeout(resolve, LISTEN_WAIT_MS)))]);
  clearTimeout(waited);

  const feed = new PgEventFeed(data, listener, { onError: (err) => log.warn({ err: String(err) }, 'reading events failed; retrying') });
  const tokenLookup = new PgTokenCache(data, listener);
  const zones = ZoneCatalogue.load(opts.zonesFile);
  const placement = new ZonePlacement(zones, data);
  // The data plane's counters and events go to this instance's journal first, then into the
  // database in order, each report once (a kill -9 or an outage loses none of them).
  const view = new LocalView(data, listener, log, CounterJournal.open(join(opts.dataDir, 'counter-journal.log'), log));
  const publishLocal = (e: EventInput) => view.publish(e);
  const usage = buildUsageHistory(opts, data, log);
  let self: Services | undefined;
  const geo = new ServeGeoRoutes(data, () => zones.list());
  geo.start();
  const dataPlane = buildDataPlane(opts, config, log, view, publishLocal, zones, usage, metrics, cappedToWebhooks(() => self), geo);
  view.attach(dataPlane);
  const sessions = new SessionService({ store: data, zones: placement, link: config.settings.link, dataPlane: () => dataPlane });

  // Open event streams of a token revoked on any instance are closed: the registry's watch
  // (written for SQLite's data_version) reads a version bumped here once the revoked ids have
  // been re-read after a vad_tokens notification (or a reconnection of the LISTEN connection).
  const revoked = new Set<string>();
  let revokedVersion = 0;
  const rereadRevoked = async () => {
    try {
      const rows = await data.listTokens();
      revoked.clear();
      for (const t of rows) if (t.revoked_at) revoked.add(t.id);
      revokedVersion++;
    } catch (err) {
      log.warn({ err: String(err) }, 'reading revoked tokens failed');
    }
  };
  listener.onNotification((channel) => {
    if (channel === CHANNELS.tokens) void rereadRevoked();
    // A pause, limits change or node removal on any instance: the node channels connected to
    // this one re-send their state at once (server/cluster/node-channel.ts).
    if (channel === CHANNELS.sessions || channel === CHANNELS.limits || channel === CHANNELS.nodes) clusterSignals.emit('changed');
  });
  listener.onReconnect(() => void rereadRevoked());
  const revocations = { tokenGeneration: 0, dataVersion: () => revokedVersion, isTokenActive: (id: string) => !revoked.has(id) };

  const sqliteOnly = (what: string): never => {
    throw new Error(`services.${what} exists only on the SQLite store; on PostgreSQL use services.data`);
  };
  // Caps per token and customer hold per instance.
  const streams = new StreamRegistry(revocations, config.settings.sse);
  instanceMetrics(metrics, streams, dataPlane);
  const audit = new AuditTrail(data, log);
  let closing: Promise<void> | undefined;
  const services: Services = {
    database: 'postgres',
    data,
    events: {
      eventsAfter: (customerId, afterId, filter, limit) => data.eventsAfter(customerId, afterId, filter, limit),
      subscribe: (sub) => feed.subscribe(sub),
      fromLog: true,
    },
    publish: (e): Promise<SessionEvent> => feed.publish(e),
    // Stored in a transaction whose NOTIFY (delivered at the commit) wakes every instance's feed.
    announce: () => {},
    tokenLookup,
    get store() {
      return sqliteOnly('store');
    },
    get bus() {
      return sqliteOnly('bus');
    },
    zones,
    placement,
    sessions,
    dataPlane,
    tls,
    log,
    settings: config.settings,
    streams,
    tokens: { create: () => sqliteOnly('tokens.create') },
    usage,
    metrics,
    audit,
    geo,
    close: () =>
      (closing ??= (async () => {
        audit.close();
        geo.stop();
        if (dataPlane) await dataPlane.close();
        await view.close();
        await usage?.close();
        await feed.close();
        tokenLookup.close();
        await listener.close();
        await data.close();
      })()),
  };
  self = services;
  return services;
}
