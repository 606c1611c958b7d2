// Proxy user names with geographic targeting, shared by the server and the UI (no imports).
//   <user>                    no targeting
//   <user>-cc-DE              country (upper case)
//   <user>-cc-US-city-new.york  country and city (lower case, each space written as a dot)

export interface ProxyTarget {
  country?: string;
  city?: string;
}

export interface ParsedProxyUser extends ProxyTarget {
  user: string;
}

/** Normalises a city name the way the proxy string carries it: "New York" -> "new.york". */
export function cityToken(city: string): string {
  return city.trim().toLowerCase().replace(/\s+/g, '.');
}

/** Turns a city token back into words: "new.york" -> "new york". */
export function cityFromToken(token: string): string {
  return token.replace(/\./g, ' ');
}

export function buildProxyUser(user: string, target: ProxyTarget = {}): string {
  if (!target.country) {
    if (target.city) throw new Error('a city needs a country');
    return user;
  }
  const cc = target.country.trim().toUpperCase();
  if (!/^[A-Z]{2}$/.test(cc)) throw new Error(`invalid country code: ${target.country}`);
  let out = `${user}-cc-${cc}`;
  if (target.city) {
    const c = cityToken(target.city);
    if (!c || c.includes('-')) throw new Error(`invalid city: ${target.city}`);
    out += `-city-${c}`;
  }
  return out;
}

/**
 * Splits a proxy user name into the base user and its targeting. Returns undefined when the
 * suffix is malformed (lower-case country, upper-case city, empty parts, unknown keys).
 */
export function parseProxyUser(name: string): ParsedProxyUser | undefined {
  const i = name.lastIndexOf('-cc-');
  if (i < 0) return name ? { user: name } : undefined;
  const user = name.slice(0, i);
  if (!user) return undefined;
  const rest = name.slice(i + 4);
  const m = /^([A-Z]{2})(?:-city-([\p{Ll}\p{Lo}0-9.']+))?$/u.exec(rest);
  if (!m) return undefined;
  const out: ParsedProxyUser = { user, country: m[1] };
  if (m[2] !== undefined) {
    if (m[2].startsWith('.') || m[2].endsWith('.') || m[2].includes('..')) return undefined;
    out.city = m[2];
  }
  return out;
}
