// What a form shows once the server answers its save (or its first load): a field still as it
// was sent takes the server's value, a field typed into since keeps its text, so a slow answer
// wipes nothing the person typed meanwhile. The limits form and the subscription page settings.

/** `fresh` (the server's values) for every key, except where `now` differs from `sent`: there `now`. */
export function keepTyped<K extends string>(keys: readonly K[], now: Partial<Record<K, string>>, sent: Partial<Record<K, string>>, fresh: Partial<Record<K, string>>): Record<K, string> {
  return Object.fromEntries(keys.map((k) => [k, now[k] !== sent[k] ? (now[k] ?? '') : (fresh[k] ?? '')])) as Record<K, string>;
}
