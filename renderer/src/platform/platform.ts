// The one way the renderer reaches the outside world. Two implementations: `electron.ts`
// over the preload bridge (`window.app`) and `web.ts` over HTTP + EventSource.
import type { AppOps } from '../../../common/ipc-contract.ts';
import type { EventFilter, SessionEvent, StreamState } from '../../../common/api-types.ts';
import type { ApiErrorInfo } from '../../../common/result.ts';

/** Every request/response operation of the preload contract, unwrapped: resolves or throws ApiError. */
export type PlatformOps = {
  [K in keyof AppOps]: (...args: Parameters<AppOps[K]>) => Promise<
    Awaited<ReturnType<AppOps[K]>> extends { ok: true; value: infer V } | { ok: false } ? V : never
  >;
};

export interface StreamHandlers {
  onEvent(event: SessionEvent): void;
  onState?(state: StreamState, error?: ApiErrorInfo): void;
}

export interface Platform {
  readonly kind: 'electron' | 'web';
  readonly ops: Omit<PlatformOps, 'openStream' | 'closeStream'>;
  /** Opens an event stream (resumes with Last-Event-ID and backs off); returns the unsubscribe. */
  subscribe(filter: EventFilter, handlers: StreamHandlers): () => void;
  /** Electron: the main process asks to show a route (tray menu). */
  onNavigate(listener: (route: string) => void): () => void;
  /** Web mode only: set or forget the API token kept in this browser. */
  setToken?(token: string | null): void;
  /**
   * Web mode only: a token from a `#token=` link that differs from the stored one is held, not
   * used, until the user decides. Resolves with whom it signs in as (server-info), null when no
   * link token waits, or throws when the server refuses it (then it is dropped).
   */
  linkToken?(): Promise<{ customer: string; role: string } | null>;
  /** Web mode only: use the held link token (replacing the stored one) or drop it. */
  resolveLinkToken?(use: boolean): void;
}

export class ApiError extends Error implements ApiErrorInfo {
  status: number;
  code: string;
  details: Record<string, unknown>;
  retryAfter?: number;
  constructor(info: ApiErrorInfo) {
    super(info.message);
    this.name = 'ApiError';
    this.status = info.status;
    this.code = info.code;
    this.details = info.details ?? {};
    this.retryAfter = info.retryAfter;
  }
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}

export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  const message = e instanceof Error ? e.message : String(e);
  return new ApiError({ status: 0, code: 'client_error', message, details: {} });
}
