// An operation's SQL text made ready for one dialect (translated once, cached). Operations write `?`
// placeholders and these fragments:
// - `{now}`: the database's clock, ISO text (SQLite) or timestamptz (PostgreSQL), for node contact
//   times, which every instance must judge by the same clock; `{ago:N}`: that clock N seconds ago;
// - `{iso:col}`: a contact time read back as ISO text with milliseconds;
// - `{seq:alias}`: a table's insertion order (SQLite's rowid; an identity column on PostgreSQL).
import type { Dialect, Notice } from './op.ts';

const SQLITE_ISO = "'%Y-%m-%dT%H:%M:%fZ'";

type Fragment = 'now' | 'ago' | 'iso' | 'seq';
const FRAGMENTS: Record<Dialect, Record<Fragment, (arg: string) => string>> = {
  sqlite: {
    now: () => `strftime(${SQLITE_ISO}, 'now')`,
    ago: (n) => `strftime(${SQLITE_ISO}, 'now', '-${n} seconds')`,
    iso: (col) => col,
    seq: (alias) => `${alias}.rowid`,
  },
  postgres: {
    now: () => 'now()',
    ago: (n) => `(now() - make_interval(secs => ${n}))`,
    iso: (col) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
    seq: (alias) => `${alias}.seq`,
  },
};

/** A per-dialect cache of translated statement texts. */
export function sqlFor(d: Dialect): (sql: string, notice?: Notice) => string {
  const cache = new Map<string, string>();
  return (sql, notice) => {
    const key = notice ? `${sql}\u0000${notice.channel}\u0000${notice.expr}` : sql;
    let out = cache.get(key);
    if (out === undefined) {
      out = sql.replace(/\{(now|ago|iso|seq)(?::([A-Za-z0-9_.]+))?\}/g, (_m, name: Fragment, arg = '') => FRAGMENTS[d][name](arg));
      if (d === 'postgres') {
        let i = 0;
        out = out.replace(/\?/g, () => `$${++i}`); // no `?` appears in the service's SQL otherwise
        if (notice) out += ` RETURNING pg_notify('${notice.channel}', ${notice.expr})`;
      }
      if (cache.size > 2000) cache.clear(); // IN lists of many lengths must not grow it for ever
      cache.set(key, out);
    }
    return out;
  };
}
