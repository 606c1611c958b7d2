// Why a connection was refused, in words, with what fixes it and where (the Refusals card of a
// session). `reason` is the API's code: an admission reason or a proxy error code.
import type { LimitScope } from '../../../common/api-types.ts';
import { formatDateTime } from './format.ts';

/** What the words may name: the session's renewal date, the client's limits, the client. */
export interface RefusalContext {
  clientId: string;
  /** When the periodic cap in force renews (the session's over_quota_until), if known. */
  quotaUntil?: string;
  maxSessions?: number | null;
  maxReconnections?: number | null;
  /** The client limits' reset period (day, week, month ...), when the client cap renews. */
  clientPeriod?: string | null;
  /** Another active session of the client, when known: the one max_sessions counts against. */
  otherActive?: string;
}

export type RefusalLink = { kind: 'limits'; scope: LimitScope; label: string } | { kind: 'client'; label: string } | { kind: 'session'; id: string; label: string };

export interface RefusalWords {
  /** What happened, short. */
  what: string;
  /** What fixes it. */
  fix: string;
  link?: RefusalLink;
}

const until = (ctx: RefusalContext) => (ctx.quotaUntil ? ` until ${formatDateTime(ctx.quotaUntil)}` : '');
const PERIODS: Record<string, string> = { day: 'daily ', week: 'weekly ', month: 'monthly ', rolling_30d: '30-day ' };
const periodWord = (p: string | null | undefined) => (p ? PERIODS[p] ?? '' : '');
const limitsLink = (scope: LimitScope, label: string): RefusalLink => ({ kind: 'limits', scope, label });
const clientLink: RefusalLink = { kind: 'client', label: 'the client\'s sessions' };

export function refusalWords(reason: string, ctx: RefusalContext): RefusalWords {
  switch (reason) {
    case 'paused':
      return { what: 'Paused', fix: 'press Resume.' };
    case 'ended':
      return { what: 'The session has ended', fix: 'create a new session for the client (an ended session never carries traffic again).', link: clientLink };
    case 'expired':
      return { what: 'The session\'s end time has passed', fix: 'create a new session for the client.', link: clientLink };
    case 'not_reusable':
      return { what: 'A one-shot session already used once', fix: 'create a new session, reusable if the app reconnects.', link: clientLink };
    case 'max_reconnections':
      return {
        what: `max_reconnections${ctx.maxReconnections != null ? ` ${ctx.maxReconnections}` : ''} reached`,
        fix: 'raise max_reconnections in the client limits, or create a new session.',
        link: limitsLink('client', 'Client limits'),
      };
    case 'max_sessions':
      return {
        what: `max_sessions${ctx.maxSessions != null ? ` ${ctx.maxSessions}` : ''} reached: the client has that many other sessions with open connections`,
        fix: 'close one of the client\'s other sessions (pause it), or raise max_sessions in the client limits.',
        link: ctx.otherActive ? { kind: 'session', id: ctx.otherActive, label: `the active session ${ctx.otherActive.slice(0, 8)}` } : clientLink,
      };
    case 'too_many_connections':
      return { what: 'Too many open connections at once for one session', fix: 'close some in the client app; the cap per session is the server\'s.' };
    case 'connection_rate':
      return { what: 'Churn limit: too many new connections a second', fix: 'the client app reconnects in a loop: fix its settings, then it gets through at once.' };
    case 'session_cap':
      return { what: `Session over its byte cap${until(ctx)}`, fix: 'raise the session cap, or wait for it to renew.', link: limitsLink('session', 'Session limits') };
    case 'client_cap':
      return { what: `Client over its ${periodWord(ctx.clientPeriod)}byte cap${until(ctx)}`, fix: 'raise the cap or wait.', link: limitsLink('client', 'Client limits') };
    case 'global_cap':
      return { what: `The account is over its global byte cap${until(ctx)}`, fix: 'raise the global cap or wait.', link: limitsLink('global', 'Global limits') };
    case 'unknown':
      return { what: 'Unknown session id on that server or node', fix: 'the app uses an old link or a node the session is not on: import the session\'s link again.' };
    case 'unavailable':
      return { what: 'The server could not read its database', fix: 'check the server (Settings → Doctor); the app gets through once it is back.' };
    case 'client_disabled':
      return { what: 'The client is disabled', fix: 'enable the client.', link: clientLink };
    case 'client_expired':
      return { what: 'The client\'s access has expired', fix: 'extend the client\'s access.', link: clientLink };
    case 'proxy_auth_required':
      return { what: 'Proxy: wrong or missing credential (407; SOCKS5: authentication refused)', fix: 'use user <session id> (optionally -cc-XX) and the session id as the password.' };
    case 'proxy_unknown_param':
    case 'proxy_duplicate_param':
    case 'proxy_bad_param':
    case 'proxy_city_without_country':
      return { what: 'Proxy: malformed user name (400; SOCKS5 reply 0x02)', fix: 'write it as <session id>[-cc-XX[-city-name]][-sessid-key[-sesstime-minutes][-strict]], each key once.' };
    case 'location_unavailable':
      return { what: 'Proxy: that country or city is not available (412; SOCKS5 reply 0x03)', fix: 'ask for a country and city of a zone with a node up.' };
    case 'destination_forbidden':
      return { what: 'Destination not allowed by the server\'s egress policy (403)', fix: 'private and loopback addresses are refused unless the server allows them.' };
    default:
      return { what: reason, fix: 'see the server\'s log for this reason.' };
  }
}
