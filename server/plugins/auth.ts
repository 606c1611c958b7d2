// Token authentication for the /v2 subtree. Both `Authorization: Bearer <token>` (scheme
// case-insensitive) and `Authorization: <token>` are accepted; tokens are looked up by hash.
import type { FastifyContextConfig, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../contract/errors.ts';
import type { Role, Store, TokenInfo } from '../store/store.ts';

export interface AuthContext {
  customerId: string;
  /** The customer's name, as `token create --customer` gave it (server-info shows it). */
  customerName: string;
  role: Role;
  tokenId: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null;
    /** The rate limiter's look-up of the request's token (http/v2-guard.ts), reused by the auth hook. */
    tokenFound: { header: string | string[] | undefined; token: string; found: ReturnType<TokenFinder['find']> } | null;
  }
  interface FastifyContextConfig {
    /** Routes that answer without a token (the OpenAPI document). */
    public?: boolean;
    /** Routes that need the owner role: the resource they manage, named in the 403 ("limits", "webhooks"). */
    ownerOnly?: string | true;
  }
}

const TOKEN_SHAPE = /^[A-Za-z0-9._~+/=-]{1,512}$/;

/** The last header read and its token: a client's requests repeat the same header (compared by value). */
let lastHeader: string | undefined;
let lastToken: string | undefined;

/** The token from an Authorization header, or undefined when the header is missing or malformed. */
export function extractToken(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  if (header === lastHeader) return lastToken;
  const value = header.trim();
  const m = /^bearer\s+(.+)$/i.exec(value);
  const token = (m ? m[1] : value).trim();
  lastToken = TOKEN_SHAPE.test(token) ? token : undefined;
  lastHeader = header;
  return lastToken;
}

/**
 * Token look-ups cached for a short time: a hot path (every request) that would otherwise hash
 * and query SQLite each time. The cache is dropped whenever tokens change: at once for changes
 * made through this process's Store, and within `checkMs` for changes by another process (the
 * CLI's `token revoke`), seen through SQLite's data_version. `ttlMs` bounds any entry's age.
 */
/** Token look-ups of the API guard: synchronous on SQLite, a Promise on PostgreSQL. */
export interface TokenLookup {
  find(token: string): TokenInfo | undefined | Promise<TokenInfo | undefined>;
}

export class TokenCache {
  private readonly store: Store;
  private readonly ttlMs: number;
  private readonly max: number;
  private readonly checkMs: number;
  private readonly entries = new Map<string, { info: TokenInfo | undefined; expires: number }>();
  private generation = -1;
  private dataVersion = -1;
  private checkedAt = 0;

  constructor(store: Store, ttlMs = 2000, max = 10_000, checkMs = 100) {
    this.store = store;
    this.ttlMs = ttlMs;
    this.max = max;
    this.checkMs = checkMs;
  }

  find(token: string): TokenInfo | undefined {
    const now = Date.now();
    if (this.store.tokenGeneration !== this.generation) {
      this.generation = this.store.tokenGeneration;
      this.entries.clear();
    }
    if (now - this.checkedAt >= this.checkMs) {
      this.checkedAt = now;
      const version = this.store.dataVersion();
      if (version !== this.dataVersion) {
        this.dataVersion = version;
        this.entries.clear();
      }
    }
    const hit = this.entries.get(token);
    if (hit && hit.expires > now) return hit.info;
    const info = this.store.findToken(token);
    if (this.entries.size >= this.max) this.entries.clear();
    this.entries.set(token, { info, expires: now + this.ttlMs });
    return info;
  }
}

/** Token look-ups as the guard makes them: TokenCache (SQLite) answers at once, PgTokenCache with a Promise. */
export interface TokenFinder {
  find(token: string): TokenInfo | undefined | Promise<TokenInfo | undefined>;
}

/**
 * The auth hook of one route, its config (public, ownerOnly) read when the route is added: fastify's
 * request.routeOptions builds a new object on every read.
 */
export function authenticate(tokens: TokenFinder, config: FastifyContextConfig | undefined) {
  const isPublic = config?.public === true;
  const ownerOnly = config?.ownerOnly;
  // A callback hook, not an async one: on SQLite the look-up answers at once and the request
  // goes on without a promise and a turn of the microtask queue; PostgreSQL's look-up is awaited.
  return function authHook(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
    if (isPublic) return done();
    const header = request.headers.authorization;
    // The limiter's look-up of this very header (its token already extracted), else our own.
    const looked = request.tokenFound;
    const token = looked && looked.header === header ? looked.token : extractToken(header);
    if (!token) {
      return done(new ApiError('unauthorized', header ? 'The Authorization header is malformed.' : 'An API token is required (Authorization: Bearer <token>).'));
    }
    const found = looked && looked.token === token ? looked.found : tokens.find(token);
    if (found instanceof Promise) {
      found.then((info) => done(admit(request, info, ownerOnly)), done);
      return;
    }
    done(admit(request, found, ownerOnly));
  };
}

/** Sets request.auth from the token found; the refusal when there is none or its role may not use the route. */
function admit(request: FastifyRequest, info: TokenInfo | undefined, resource: string | true | undefined): ApiError | undefined {
  if (!info) return new ApiError('unauthorized', 'The API token is not valid.');
  request.auth = { customerId: info.customer_id, customerName: info.customer_name, role: info.role, tokenId: info.id };
  if (resource && info.role !== 'owner') {
    const what = resource === true ? 'use this route' : `manage ${resource}`;
    return new ApiError('forbidden', `This token may not ${what}; an owner token is required.`, { role: info.role, ...(resource === true ? {} : { resource }) });
  }
  return undefined;
}

/** The caller's context inside a handler; the auth hook guarantees it on non-public routes. */
export function callerOf(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new ApiError('unauthorized', 'An API token is required (Authorization: Bearer <token>).');
  return request.auth;
}
