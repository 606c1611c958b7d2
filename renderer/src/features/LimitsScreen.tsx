// The three limits records (global, client, session defaults) as tabs, each shown and edited
// with the limits form (LimitsForm.tsx): validated as typed, saved, deleted; the not-set and
// the forbidden states explained.
import { useEffect, useRef, type KeyboardEvent } from 'react';
import type { LimitScope } from '../../../common/api-types.ts';
import { deleteLimits, loadLimits, navigate, saveLimits, scopeTitle, useStore } from '../store/index.ts';
import { Screen } from '../components/ui.tsx';
import { selectLimits } from '../store/selectors.ts';
import { LimitsForm, type FormField } from './LimitsForm.tsx';

const SCOPES: LimitScope[] = ['global', 'client', 'session'];
export const FIELDS: Record<LimitScope, FormField[]> = {
  global: ['downloaded_bytes', 'uploaded_bytes', 'download_speed', 'upload_speed'],
  client: ['downloaded_bytes', 'uploaded_bytes', 'download_speed', 'upload_speed', 'max_sessions', 'max_reconnections', 'max_devices'],
  session: ['downloaded_bytes', 'uploaded_bytes', 'download_speed', 'upload_speed'],
};
const DESCRIPTION: Record<LimitScope, string> = {
  global: 'Global limits apply to all of your clients together.',
  client: 'Client limits apply to each client on its own, summed over its sessions: the template every client gets unless its page overrides a value.',
  session: 'Session limits are the defaults every session gets.',
};

function ScopeForm({ scope }: { scope: LimitScope }) {
  const st = useStore(selectLimits(scope));
  return (
    <LimitsForm
      idPrefix={`limit-${scope}`}
      title={`${scopeTitle(scope)} limits`}
      fields={FIELDS[scope]}
      st={st}
      unset={
        <>
          <strong>No {scope} limits are set</strong>, so nothing is capped at this level. Fill in any field and save to create them.
        </>
      }
      saveLabel="Save limits"
      deleteLabel="Delete limits"
      onSave={(body) => saveLimits(scope, body)}
      onDelete={() => void deleteLimits(scope)}
      onRetry={() => void loadLimits(scope)}
    />
  );
}

export function LimitsScreen({ scope }: { scope: LimitScope }) {
  const tabs = useRef<Array<HTMLButtonElement | null>>([]);
  useEffect(() => {
    void loadLimits(scope);
  }, [scope]);
  const onKey = (e: KeyboardEvent) => {
    const i = SCOPES.indexOf(scope);
    let n = -1;
    if (e.key === 'ArrowRight') n = (i + 1) % SCOPES.length;
    else if (e.key === 'ArrowLeft') n = (i + SCOPES.length - 1) % SCOPES.length;
    else if (e.key === 'Home') n = 0;
    else if (e.key === 'End') n = SCOPES.length - 1;
    if (n < 0) return;
    e.preventDefault();
    navigate({ name: 'limits', scope: SCOPES[n] });
    tabs.current[n]?.focus();
  };
  return (
    <Screen name="limits" title="Limits">
      <div className="tabs" role="tablist" aria-label="Limit records" onKeyDown={onKey}>
        {SCOPES.map((sc, i) => (
          <button
            key={sc}
            ref={(el) => {
              tabs.current[i] = el;
            }}
            type="button"
            role="tab"
            id={`tab-${sc}`}
            aria-selected={sc === scope}
            aria-controls={`panel-${sc}`}
            tabIndex={sc === scope ? 0 : -1}
            className="tab"
            onClick={() => navigate({ name: 'limits', scope: sc })}
          >
            {scopeTitle(sc)}
          </button>
        ))}
      </div>
      <div className="card" role="tabpanel" id={`panel-${scope}`} aria-labelledby={`tab-${scope}`}>
        <p className="muted">{DESCRIPTION[scope]}</p>
        <ScopeForm key={scope} scope={scope} />
      </div>
    </Screen>
  );
}
