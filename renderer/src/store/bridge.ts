// The one place where the outside world's events enter the store: the platform's event
// stream (batched per 250 ms so a burst costs one render), navigation requests from the
// main process, and the location hash.
import { getPlatform } from '../platform/index.ts';
import type { SessionEvent } from '../../../common/api-types.ts';
import type { Route } from './index.ts';
import { applyEvents, setRoute, setStreamState, useStore } from './index.ts';

export function parseHash(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  switch (parts[0]) {
    case 'new':
      return { name: 'new' };
    case 'sessions':
      return parts[1] ? { name: 'session', id: parts[1] } : { name: 'sessions' };
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
    case 'limits':
      return `#/limits/${r.scope}`;
    default:
      return `#/${r.name}`;
  }
}

export function navigate(r: Route): void {
  const href = routeHref(r);
  if (location.hash !== href) location.hash = href;
  else setRoute(r);
}

/** Starts listening; returns the function that stops everything it started. */
export function startBridge(): () => void {
  const onHash = () => setRoute(parseHash(location.hash));
  window.addEventListener('hashchange', onHash);
  onHash();

  const offNav = getPlatform().onNavigate((route) => {
    location.hash = route.startsWith('#') ? route : `#${route}`;
  });

  let stream: (() => void) | null = null;
  let pending: SessionEvent[] = [];
  let timer: ReturnType<typeof setTimeout> | null = null;
  const flush = () => {
    timer = null;
    const batch = pending;
    pending = [];
    applyEvents(batch);
  };
  const openStream = () => {
    stream?.();
    stream = getPlatform().subscribe(
      { last_event_id: useStore.getState().lastEventId },
      {
        onEvent(ev) {
          pending.push(ev);
          if (!timer) timer = setTimeout(flush, 250);
        },
        onState: setStreamState,
      },
    );
  };
  // The stream runs while the app is ready (a token works); it restarts after a token change.
  let phase = useStore.getState().phase;
  if (phase === 'ready') openStream();
  const unsub = useStore.subscribe((s) => {
    if (s.phase === phase) return;
    phase = s.phase;
    if (phase === 'ready') openStream();
    else if (phase === 'need-token') {
      stream?.();
      stream = null;
    }
  });

  return () => {
    window.removeEventListener('hashchange', onHash);
    offNav();
    unsub();
    stream?.();
    if (timer) clearTimeout(timer);
  };
}
