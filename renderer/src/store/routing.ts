// Routes of the app and their hash addresses (`#/sessions/<id>`, `#/clients`, `#/clients/<id>`, `#/limits/client`, ...).
// The hash is the truth: the store's `navigate` action changes it, and the bridge turns each
// hashchange into the store's `route`. Pure: parseHash and routeHref know nothing of the store.
import type { LimitScope } from '../../../common/api-types.ts';

export type Route =
  | { name: 'sessions' }
  | { name: 'dashboard' }
  | { name: 'new' }
  | { name: 'session'; id: string }
  | { name: 'clients' }
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
      return parts[1] ? { name: 'client', id: parts[1] } : { name: 'clients' };
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
