// Encodes query parameters the way the API reads them: empty values left out, arrays as
// repeated keys (`session_id=a&session_id=b`). Pure, no imports: the UI and main use it too.
export function buildQuery(params: Record<string, unknown>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    for (const item of Array.isArray(v) ? v : [v]) p.append(k, String(item));
  }
  const s = p.toString();
  return s ? `?${s}` : '';
}
