// Turns a non-2xx answer of the API into ApiErrorInfo. Pure (no DOM, no Node): the web
// platform and the Electron main process's API client both read error answers through it.
import type { ApiErrorInfo } from './result.ts';

export function errorInfoFrom(res: { status: number; statusText: string; headers: { get(name: string): string | null } }, body: unknown): ApiErrorInfo {
  const rec = (body as { error?: Partial<ApiErrorInfo> } | null)?.error;
  const retry = Number(res.headers.get('retry-after'));
  return {
    status: res.status,
    code: rec?.code ?? `http_${res.status}`,
    message: rec?.message ?? (res.statusText || 'Request failed'),
    details: (rec?.details as Record<string, unknown>) ?? {},
    retryAfter: Number.isFinite(retry) && retry > 0 ? retry : undefined,
  };
}
