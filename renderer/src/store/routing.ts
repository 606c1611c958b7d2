// Routes of the app and their hash addresses (`#/sessions/<id>`, `#/clients/<id>`, `#/limits/client`, ...).
// The hash is the truth: `navigate` changes it, and the bridge turns each hashchange into
// the store's `route`. parseHash and routeHref are pure.
import type { LimitScope } from '../../../common/api-types.ts';
import { useStore } from './index.ts';

export type Route =
  | { name: 'sessions' }
  | { name: 'dashboard' }
  | { name: 'new' }
  | { name: 'session'; id: string }
  | { name: 'client'; id: string }
  | { name: 'limits'; scope: LimitScope }
  | { name: 'events' }
  | { name: 'proxy' }
  | { name: 'settings' };

export function parseHash(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  switch (parts[0]) {
    case 'new':
      return { name: 'new' };
    case 'dashboard':
      return { name: 'dashboard' };
    case 'sessions':
      return parts[1] ? { name: 'session', id: parts[1] } : { name: 'sessions' };
    case 'clients':
      return parts[1] ? { name: 'client', id: parts[1] } : { name: 'sessions' };
    case 'limits':
      return { name: 'limits', scope: parts[1] === 'client' || parts[1] === 'session' ? parts[1] : 'global' };
    case 'events':
      return { name: 'events' };
    case 'proxy':
      return { name: 'proxy' };
    case 'settings':
      return { name: 'settings' };
    default:
      return { name: 'sessions' };
  }
}

export function routeHref(r: Route): string {
  switch (r.name) {
    case 'session':
      return `#/sessions/${encodeURIComponent(r.id)}`;
    case 'client':
      return `#/clients/${encodeURIComponent(r.id)}`;
    case 'limits':
      return `#/limits/${r.scope}`;
    default:
      return `#/${r.name}`;
  }
}

/** Shows a route: through the hash (so Back works), or directly when the hash already says it. */
export function navigate(r: Route): void {
  const href = routeHref(r);
  if (location.hash !== href) location.hash = href;
  else useStore.getState().setRoute(r);
}
