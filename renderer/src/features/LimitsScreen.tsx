// The three limits records (global, client, session defaults): shown, edited with
// validation (amounts readable as KB/MB/GB, sent as integers), deleted; the not-set and
// the forbidden states explained.
import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import type { LimitField, LimitScope, LimitsRecord, LimitsUpdate, ResetPeriod } from '../../../common/api-types.ts';
import { formatBytes, formatDateTime, formatSpeed, parseAmount } from '../lib/format.ts';
import { deleteLimits, loadLimits, navigate, saveLimits, scopeTitle, useStore } from '../store/index.ts';
import { ErrorBanner, FormRow, Screen, Spinner } from '../components/ui.tsx';
import { selectLimits } from '../store/selectors.ts';

const SCOPES: LimitScope[] = ['global', 'client', 'session'];
const FIELDS: Record<LimitScope, LimitField[]> = {
  global: ['downloaded_bytes', 'uploaded_bytes', 'download_speed', 'upload_speed'],
  client: ['downloaded_bytes', 'uploaded_bytes', 'download_speed', 'upload_speed', 'max_sessions', 'max_reconnections', 'max_devices'],
  session: ['downloaded_bytes', 'uploaded_bytes', 'download_speed', 'upload_speed'],
};
const META: Record<LimitField, { label: string; kind: 'bytes' | 'speed' | 'count'; help: string }> = {
  downloaded_bytes: { label: 'Downloaded bytes', kind: 'bytes', help: 'Total download allowed, e.g. 500 MB or 2 GB.' },
  uploaded_bytes: { label: 'Uploaded bytes', kind: 'bytes', help: 'Total upload allowed, e.g. 100 MB.' },
  download_speed: { label: 'Download speed', kind: 'speed', help: 'Bytes per second, e.g. 512 KB/s or 10 MB/s.' },
  upload_speed: { label: 'Upload speed', kind: 'speed', help: 'Bytes per second, e.g. 256 KB/s.' },
  max_sessions: { label: 'Max sessions', kind: 'count', help: 'Sessions of one client with open connections at the same time.' },
  max_reconnections: { label: 'Max reconnections', kind: 'count', help: 'Connections after the first that one reusable session may open.' },
  max_devices: { label: 'Max devices', kind: 'count', help: 'Devices (apps sending a device id) that may fetch the client\'s subscription; 0 or empty: no limit; at most 1000.' },
};
const DESCRIPTION: Record<LimitScope, string> = {
  global: 'Global limits apply to all of your clients together.',
  client: 'Client limits apply to each client on its own, summed over its sessions.',
  session: 'Session limits are the defaults every session gets.',
};
const MAX = Number.MAX_SAFE_INTEGER;
const PERIODS: Array<{ value: ResetPeriod; label: string }> = [
  { value: 'none', label: 'Never (lifetime totals)' },
  { value: 'day', label: 'Every day (midnight UTC)' },
  { value: 'week', label: 'Every week' },
  { value: 'month', label: 'Every month' },
  { value: 'rolling_30d', label: 'Rolling 30 days' },
];

function readable(field: LimitField, v: number | null): string {
  if (v === null || Number.isNaN(v)) return '';
  const kind = META[field].kind;
  return kind === 'bytes' ? formatBytes(v) : kind === 'speed' ? formatSpeed(v) : `${v}`;
}

function validate(field: LimitField, text: string): { value: number | null; error: string | null } {
  const kind = META[field].kind;
  const value = kind === 'count' ? (text.trim() === '' ? null : /^\d+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN) : parseAmount(text);
  if (value === null) return { value, error: null };
  if (Number.isNaN(value)) return { value, error: kind === 'count' ? 'Enter a whole number.' : 'Enter a number, optionally with a unit: 1048576, 512 KB, 1.5 GB.' };
  if (value > MAX) return { value, error: 'That number is too large.' };
  if (field === 'max_devices' && value > 1000) return { value, error: 'At most 1000 devices.' };
  if (kind === 'speed' && value < 1) return { value, error: 'A speed limit must be at least 1 byte per second.' };
  return { value, error: null };
}

function toTexts(scope: LimitScope, r: LimitsRecord | null): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of FIELDS[scope]) out[f] = r && r[f] !== undefined && r[f] !== null ? String(r[f]) : '';
  return out;
}

type Check = ReturnType<typeof validate>;

/** One limit: its input, and below it the amount read back in words, its example, or why it is refused. */
function LimitFieldRow({ scope, field, text, check, showError, onChange }: { scope: LimitScope; field: LimitField; text: string; check: Check; showError: boolean; onChange: (v: string) => void }) {
  const f = field;
  const c = check;
  const id = `limit-${scope}-${f}`;
  const showErr = (showError || text !== '') && c.error;
  return (
    <FormRow label={META[f].label} htmlFor={id}>
      <input
        id={id}
        name={f}
        inputMode={META[f].kind === 'count' ? 'numeric' : 'text'}
        autoComplete="off"
        value={text}
        placeholder="No limit"
        aria-invalid={!!showErr}
        aria-describedby={`${id}-help`}
        onChange={(e) => onChange(e.target.value)}
      />
      <p id={`${id}-help`} className={showErr ? 'help help-error' : 'help'}>
        {showErr ? c.error : c.value !== null ? `= ${readable(f, c.value)}${META[f].kind !== 'count' ? ` (${c.value} ${META[f].kind === 'speed' ? 'bytes/s' : 'bytes'})` : ''}` : META[f].help}
      </p>
    </FormRow>
  );
}

function ResetPeriodRow({ scope, period, setPeriod }: { scope: LimitScope; period: ResetPeriod; setPeriod: (p: ResetPeriod) => void }) {
  return (
    <FormRow label="Byte caps renew" htmlFor={`limit-${scope}-reset`}>
      <select id={`limit-${scope}-reset`} value={period} aria-describedby={`limit-${scope}-reset-help`} onChange={(e) => setPeriod(e.target.value as ResetPeriod)}>
        {PERIODS.map((p) => (
          <option key={p.value} value={p.value}>
            {p.label}
          </option>
        ))}
      </select>
      <p id={`limit-${scope}-reset-help`} className="help">
        {period === 'none'
          ? 'The byte caps count everything ever moved.'
          : period === 'rolling_30d'
            ? 'The byte caps count the last 30 days; over them, connections are refused until older traffic falls out of the window.'
            : 'The byte caps count from the start of the period; over them, connections are refused until it renews, by itself.'}
      </p>
    </FormRow>
  );
}

function LimitsForm({ scope }: { scope: LimitScope }) {
  const st = useStore(selectLimits(scope));
  const [texts, setTexts] = useState<Record<string, string>>(() => toTexts(scope, st.record));
  const [submitted, setSubmitted] = useState(false);
  const [formError, setFormError] = useState<string | null>(null);
  const [period, setPeriod] = useState<ResetPeriod>(st.record?.reset_period ?? 'none');
  useEffect(() => {
    setTexts(toTexts(scope, st.record));
    setPeriod(st.record?.reset_period ?? 'none');
    setSubmitted(false);
  }, [scope, st.record]);

  if (st.load === 'loading' || st.load === 'idle') return <Spinner label={`Loading ${scope} limits…`} />;
  if (st.load === 'forbidden')
    return (
      <div className="notice" role="alert">
        <strong>Not allowed.</strong> This API token has the agent role, which can manage sessions but not limits (the server answered 403). Use an owner token to see and change limits.
      </div>
    );
  if (st.load === 'error') return <ErrorBanner error={st.error} onRetry={() => void loadLimits(scope)} />;

  const checks = Object.fromEntries(FIELDS[scope].map((f) => [f, validate(f, texts[f] ?? '')])) as Record<LimitField, ReturnType<typeof validate>>;
  const invalid = FIELDS[scope].some((f) => checks[f].error);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setSubmitted(true);
    setFormError(null);
    if (invalid) return;
    const body: LimitsUpdate = {};
    for (const f of FIELDS[scope]) {
      const v = checks[f].value;
      if (v !== null) body[f] = v;
      else if (st.record && st.record[f] !== undefined) body[f] = null;
    }
    if (period !== (st.record?.reset_period ?? 'none')) body.reset_period = period === 'none' ? null : period;
    if (!Object.keys(body).length) {
      setFormError('Enter at least one limit to save.');
      return;
    }
    await saveLimits(scope, body);
  };

  return (
    <form className="form" onSubmit={submit} noValidate aria-label={`${scopeTitle(scope)} limits`}>
      {st.load === 'unset' ? (
        <p className="notice" data-testid="limits-unset">
          <strong>No {scope} limits are set</strong>, so nothing is capped at this level. Fill in any field and save to create them.
        </p>
      ) : st.record ? (
        <p className="muted small">
          Record <span className="mono">{st.record.id.slice(0, 8)}</span> · created {formatDateTime(st.record.created_at)} · updated {formatDateTime(st.record.updated_at)}
        </p>
      ) : null}
      {FIELDS[scope].map((f) => (
        <LimitFieldRow key={f} scope={scope} field={f} text={texts[f] ?? ''} check={checks[f]} showError={submitted} onChange={(v) => setTexts((t) => ({ ...t, [f]: v }))} />
      ))}
      <ResetPeriodRow scope={scope} period={period} setPeriod={setPeriod} />
      {formError ? (
        <div className="error-banner" role="alert">
          {formError}
        </div>
      ) : null}
      <ErrorBanner error={st.error} />
      <div className="actions">
        <button type="submit" className="btn btn-primary" disabled={st.saving}>
          Save limits
        </button>
        <button type="button" className="btn btn-danger" disabled={st.saving || st.load !== 'ready'} onClick={() => void deleteLimits(scope)}>
          Delete limits
        </button>
        {st.saving ? <Spinner label="Saving…" /> : null}
      </div>
    </form>
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
        <LimitsForm key={scope} scope={scope} />
      </div>
    </Screen>
  );
}
