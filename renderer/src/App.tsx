// The window: before the API answers, a gate (Gates.tsx: the token prompt, "server unreachable",
// a rate limit met while connecting); then the frame (Shell.tsx: header, navigation, notices,
// toasts) around the current screen.
import { useEffect, useRef } from 'react';
import type { Route } from './store/routing.ts';
import { useStore } from './store/index.ts';
import { selectPhase, selectRoute } from './store/selectors.ts';
import { RateLimitNotice, StaleBanner } from './components/notices.tsx';
import { Gate, LinkTokenDialog } from './features/Gates.tsx';
import { Frame, Toasts } from './features/Shell.tsx';
import { SessionsScreen } from './features/SessionsScreen.tsx';
import { NewSessionScreen } from './features/NewSession.tsx';
import { SessionDetail } from './features/SessionDetail.tsx';
import { ClientScreen } from './features/ClientScreen.tsx';
import { ClientsScreen } from './features/ClientsScreen.tsx';
import { LimitsScreen } from './features/LimitsScreen.tsx';
import { EventsScreen } from './features/EventsScreen.tsx';
import { ProxyScreen } from './features/ProxyScreen.tsx';
import { DashboardScreen } from './features/DashboardScreen.tsx';
import { SettingsScreen } from './features/SettingsScreen.tsx';

function Screen({ route }: { route: Route }) {
  switch (route.name) {
    case 'sessions':
      return <SessionsScreen />;
    case 'new':
      return <NewSessionScreen />;
    case 'dashboard':
      return <DashboardScreen />;
    case 'session':
      return <SessionDetail id={route.id} />;
    case 'clients':
      return <ClientsScreen />;
    case 'client':
      return <ClientScreen id={route.id} />;
    case 'limits':
      return <LimitsScreen scope={route.scope} />;
    case 'events':
      return <EventsScreen />;
    case 'proxy':
      return <ProxyScreen />;
    case 'settings':
      return <SettingsScreen />;
  }
}

export function App() {
  const route = useStore(selectRoute);
  const phase = useStore(selectPhase);
  const mainRef = useRef<HTMLElement>(null);
  // Move focus to the new screen's heading for keyboard and screen-reader users.
  useEffect(() => {
    const h = mainRef.current?.querySelector<HTMLElement>('h1');
    if (h) {
      h.tabIndex = -1;
      h.focus({ preventScroll: true });
    }
  }, [route.name, route.name === 'session' || route.name === 'client' ? route.id : '']);

  // The link-token question stands over whatever phase the app is in.
  if (phase !== 'ready')
    return (
      <>
        <Gate />
        <LinkTokenDialog />
      </>
    );
  return (
    <div className="shell">
      <a className="skip" href="#content">
        Skip to content
      </a>
      <Frame />
      <main id="content" ref={mainRef} className="content" tabIndex={-1}>
        <div className="notices">
          <RateLimitNotice />
          <StaleBanner />
        </div>
        <Screen route={route} />
      </main>
      <Toasts />
      <LinkTokenDialog />
    </div>
  );
}
