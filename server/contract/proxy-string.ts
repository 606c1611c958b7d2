// Proxy user names with geographic targeting and sticky sessions, shared by the server and the UI
// (no imports). The one grammar (docs/api.md, "The geo proxy"):
//
//   name   = user *( "-" param )
//   user   = a session id (UUID, 8-4-4-4-12 hex digits) or a name without "-"
//   param  = "cc-" COUNTRY          two upper-case letters             -cc-US
//          / "city-" CITY           lower case, space as ".", "-" as "~" -city-new.york, -city-winston~salem
//          / "sessid-" ID           1 to 32 letters or digits          -sessid-abc123
//          / "sesstime-" MINUTES    1 to 1440, no leading zero         -sesstime-30
//          / "strict"               a flag, no value                   -strict
//
// Keys may come in any order, each at most once; `city` needs `cc`; `sesstime` and `strict`
// need `sessid`. buildProxyUser writes them in the order above.

export interface ProxyTarget {
  country?: string;
  city?: string;
  /** Sticky session key: the same exit for every connection that names it (scoped to the customer). */
  sessid?: string;
  /** How long the sticky session holds its exit, in minutes (1-1440; the server's default is 10). */
  sesstime?: number;
  /** Fail, rather than move to another exit, when the session's exit has gone. */
  strict?: boolean;
}

export interface ParsedProxyUser extends ProxyTarget {
  user: string;
}

/** The codes of a malformed proxy user name (each a row of PROXY_ERROR_STATUS, all 400). */
export type ProxyGrammarError = 'proxy_unknown_param' | 'proxy_duplicate_param' | 'proxy_bad_param' | 'proxy_city_without_country';

/** A malformed name: its code, a message for people, and the user part when one was found (for authentication). */
export interface ProxyUserError {
  error: ProxyGrammarError;
  message: string;
  user: string;
}

export const PROXY_KEYS = ['cc', 'city', 'sessid', 'sesstime', 'strict'] as const;
export const SESSTIME_MAX = 1440;
/** The escape of a "-" inside a city name (a "-" separates the parameters). */
export const CITY_DASH_ESCAPE = '~';

const UUID_PREFIX = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?=-|$)/;
const COUNTRY_RE = /^[A-Z]{2}$/;
const CITY_RE = /^[\p{Ll}\p{Lo}\p{Lm}\p{M}0-9.'~]+$/u;
const SESSID_RE = /^[A-Za-z0-9]{1,32}$/;
const SESSTIME_RE = /^[1-9][0-9]{0,3}$/;

/**
 * Normalises a city name the way the proxy string carries it: lower case, a dot that ends a word
 * dropped, each run of spaces written as one ".", each "-" as "~": "New York" -> "new.york",
 * "St. Louis" -> "st.louis", "Winston-Salem" -> "winston~salem". A token is its own token.
 */
export function cityToken(city: string): string {
  return city.trim().toLowerCase().replace(/\.(?=\s|$)/g, '').trim().replace(/\s+/g, '.').replace(/-/g, CITY_DASH_ESCAPE);
}

/** Turns a city token back into words: "new.york" -> "new york", "winston~salem" -> "winston-salem". */
export function cityFromToken(token: string): string {
  return token.replace(/\./g, ' ').replaceAll(CITY_DASH_ESCAPE, '-');
}

function validCity(token: string): boolean {
  return CITY_RE.test(token) && !token.startsWith('.') && !token.endsWith('.') && !token.includes('..');
}

export function buildProxyUser(user: string, target: ProxyTarget = {}): string {
  let out = user;
  if (target.country) {
    const cc = target.country.trim().toUpperCase();
    if (!COUNTRY_RE.test(cc)) throw new Error(`invalid country code: ${target.country}`);
    out += `-cc-${cc}`;
  }
  if (target.city) {
    if (!target.country) throw new Error('a city needs a country');
    const c = cityToken(target.city);
    if (!validCity(c)) throw new Error(`invalid city: ${target.city}`);
    out += `-city-${c}`;
  }
  if (target.sessid !== undefined) {
    if (!SESSID_RE.test(target.sessid)) throw new Error(`invalid session key: ${target.sessid} (1 to 32 letters or digits)`);
    out += `-sessid-${target.sessid}`;
  } else if (target.sesstime !== undefined || target.strict) throw new Error('sesstime and strict need a session key');
  if (target.sesstime !== undefined) {
    if (!Number.isInteger(target.sesstime) || target.sesstime < 1 || target.sesstime > SESSTIME_MAX) throw new Error(`invalid session time: ${target.sesstime} (1 to ${SESSTIME_MAX} minutes)`);
    out += `-sesstime-${target.sesstime}`;
  }
  if (target.strict) out += '-strict';
  return out;
}

const fail = (error: ProxyGrammarError, message: string, user: string): ProxyUserError => ({ error, message, user });

/** Checks one key's value and stores it; a message when the value is bad. */
function setParam(out: ParsedProxyUser, key: string, value: string): string | undefined {
  switch (key) {
    case 'cc':
      if (!COUNTRY_RE.test(value)) return `cc takes two upper-case letters, not "${value}"`;
      out.country = value;
      return undefined;
    case 'city':
      if (!validCity(value)) return `city takes a lower-case name with "." for spaces and "${CITY_DASH_ESCAPE}" for "-", not "${value}"`;
      out.city = value;
      return undefined;
    case 'sessid':
      if (!SESSID_RE.test(value)) return `sessid takes 1 to 32 letters or digits, not "${value}"`;
      out.sessid = value;
      return undefined;
    default: // sesstime
      if (!SESSTIME_RE.test(value) || +value > SESSTIME_MAX) return `sesstime takes whole minutes from 1 to ${SESSTIME_MAX}, not "${value}"`;
      out.sesstime = +value;
      return undefined;
  }
}

/**
 * Splits a proxy user name into the user and its parameters, or says what is wrong with it
 * (an error record, which names the user part when there is one).
 */
export function parseProxyUser(name: string): ParsedProxyUser | ProxyUserError {
  const uuid = UUID_PREFIX.exec(name);
  const user = uuid ? uuid[0] : name.split('-')[0];
  if (!user) return fail('proxy_bad_param', 'the user name is empty', '');
  const out: ParsedProxyUser = { user };
  const rest = name.slice(user.length);
  const parts = rest ? rest.slice(1).split('-') : [];
  const seen = new Set<string>();
  for (let i = 0; i < parts.length; i++) {
    const key = parts[i];
    if (key === '') return fail('proxy_bad_param', 'an empty parameter (two "-" in a row, or one at the end)', user);
    if (!(PROXY_KEYS as readonly string[]).includes(key)) return fail('proxy_unknown_param', `unknown parameter "${key}" (known: ${PROXY_KEYS.join(', ')})`, user);
    if (seen.has(key)) return fail('proxy_duplicate_param', `parameter "${key}" is given twice`, user);
    seen.add(key);
    if (key === 'strict') {
      out.strict = true;
      continue;
    }
    if (i + 1 >= parts.length || parts[i + 1] === '') return fail('proxy_bad_param', `parameter "${key}" needs a value`, user);
    const bad = setParam(out, key, parts[++i]);
    if (bad) return fail('proxy_bad_param', bad, user);
  }
  if (out.city && !out.country) return fail('proxy_city_without_country', 'city needs cc (the country) too', user);
  if ((out.sesstime !== undefined || out.strict) && out.sessid === undefined) return fail('proxy_bad_param', 'sesstime and strict need sessid', user);
  return out;
}

/** True for a parse result that is an error. */
export function isProxyUserError(r: ParsedProxyUser | ProxyUserError): r is ProxyUserError {
  return 'error' in r;
}
