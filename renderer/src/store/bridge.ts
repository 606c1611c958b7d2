// The one place where the outside world's events enter the store: the platform's event
// stream (batched per 250 ms so a burst costs one render), navigation requests from the
// main process, and the location hash (read by routing.ts).
import { getPlatform } from '../platform/index.ts';
import type { SessionEvent } from '../../../common/api-types.ts';
import { batcher } from './batcher.ts';
import { applyEvents, setRoute, setStreamState, useStore } from './index.ts';
import { parseHash } from './routing.ts';

/** Starts listening; returns the function that stops everything it started. */
export function startBridge(): () => void {
  const onHash = () => setRoute(parseHash(location.hash));
  window.addEventListener('hashchange', onHash);
  onHash();

  const offNav = getPlatform().onNavigate((route) => {
    location.hash = route.startsWith('#') ? route : `#${route}`;
  });

  let stream: (() => void) | null = null;
  const events = batcher<SessionEvent>(250, applyEvents);
  const openStream = () => {
    stream?.();
    stream = getPlatform().subscribe({ last_event_id: useStore.getState().lastEventId }, { onEvent: (ev) => events.push(ev), onState: setStreamState });
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
    events.cancel();
  };
}
