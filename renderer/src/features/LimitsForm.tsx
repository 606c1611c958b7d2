// The limits form: amounts readable as KB/MB/GB (sent as integers), validated as typed, the
// renewal period, save and delete; the not-set and forbidden states explained. The Limits
// screen uses it for the three customer records, the client page for a client's own override
// (with, beside each field, the value in force and where it comes from).
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from 'react';
import type { LimitField, LimitsUpdate, ResetPeriod } from '../../../common/api-types.ts';
import type { ClientOverride } from '../../../common/client-types.ts';
import type { ApiErrorInfo } from '../../../common/result.ts';
import { formatBytes, formatDateTime, formatSpeed, parseAmount } from '../lib/format.ts';
import { keepTyped } from '../lib/form-answer.ts';
import { ErrorBanner, FormRow, Spinner } from '../components/ui.tsx';

/** Every amount a form may show. */
export type FormField = LimitField;
export const META: Record<FormField, { label: string; kind: 'bytes' | 'speed' | 'count'; help: string }> = {
  downloaded_bytes: { label: 'Downloaded bytes', kind: 'bytes', help: 'Total download allowed, e.g. 500 MB or 2 GB.' },
  uploaded_bytes: { label: 'Uploaded bytes', kind: 'bytes', help: 'Total upload allowed, e.g. 100 MB.' },
  download_speed: { label: 'Download speed', kind: 'speed', help: 'Bytes per second, e.g. 512 KB/s or 10 MB/s.' },
  upload_speed: { label: 'Upload speed', kind: 'speed', help: 'Bytes per second, e.g. 256 KB/s.' },
  max_sessions: { label: 'Max sessions', kind: 'count', help: 'Sessions of one client with open connections at the same time.' },
  max_reconnections: { label: 'Max reconnections', kind: 'count', help: 'Connections after the first that one reusable session may open.' },
  max_devices: { label: 'Max devices', kind: 'count', help: "Devices (apps sending a device id) that may fetch the client's subscription; 0 or empty: no limit; at most 1000." },
};
const MAX = Number.MAX_SAFE_INTEGER;
export const PERIODS: Array<{ value: ResetPeriod; label: string }> = [
  { value: 'none', label: 'Never (lifetime totals)' },
  { value: 'day', label: 'Every day (midnight UTC)' },
  { value: 'week', label: 'Every week' },
  { value: 'month', label: 'Every month' },
  { value: 'rolling_30d', label: 'Rolling 30 days' },
];

/** A value in words: "2.00 GB", "512 KB/s", "3". */
export function readable(field: FormField, v: number | null | undefined): string {
  if (v === null || v === undefined || Number.isNaN(v)) return '';
  const kind = META[field].kind;
  return kind === 'bytes' ? formatBytes(v) : kind === 'speed' ? formatSpeed(v) : `${v}`;
}

function validate(field: FormField, text: string): { value: number | null; error: string | null } {
  const kind = META[field].kind;
  const value = kind === 'count' ? (text.trim() === '' ? null : /^\d+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN) : parseAmount(text);
  if (value === null) return { value, error: null };
  if (Number.isNaN(value)) return { value, error: kind === 'count' ? 'Enter a whole number.' : 'Enter a number, optionally with a unit: 1048576, 512 KB, 1.5 GB.' };
  if (value > MAX) return { value, error: 'That number is too large.' };
  if (field === 'max_devices' && value > 1000) return { value, error: 'At most 1000 devices.' };
  if (kind === 'speed' && value < 1) return { value, error: 'A speed limit must be at least 1 byte per second.' };
  return { value, error: null };
}

type AnyRecord = ClientOverride | null;

function toTexts(fields: FormField[], r: AnyRecord): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of fields) out[f] = r && r[f] !== undefined && r[f] !== null ? String(r[f]) : '';
  return out;
}

type Check = ReturnType<typeof validate>;

/** One limit: its input, and below it the amount read back in words, its example, or why it is refused. */
function LimitFieldRow({ idPrefix, field, text, check, showError, onChange, note }: { idPrefix: string; field: FormField; text: string; check: Check; showError: boolean; onChange: (v: string) => void; note?: ReactNode }) {
  const f = field;
  const c = check;
  const id = `${idPrefix}-${f}`;
  const showErr = (showError || text !== '') && c.error;
  return (
    <FormRow label={META[f].label} htmlFor={id}>
      <input
        id={id}
        name={f}
        inputMode={META[f].kind === 'count' ? 'numeric' : 'text'}
        autoComplete="off"
        value={text}
        placeholder={note ? 'Not overridden' : 'No limit'}
        aria-invalid={!!showErr}
        aria-describedby={note ? `${id}-help ${id}-source` : `${id}-help`}
        onChange={(e) => onChange(e.target.value)}
      />
      <p id={`${id}-help`} className={showErr ? 'help help-error' : 'help'}>
        {showErr ? c.error : c.value !== null ? `= ${readable(f, c.value)}${META[f].kind !== 'count' ? ` (${c.value} ${META[f].kind === 'speed' ? 'bytes/s' : 'bytes'})` : ''}` : META[f].help}
      </p>
      {note ? (
        <p id={`${id}-source`} className="help limit-source" data-testid={`source-${f}`}>
          {note}
        </p>
      ) : null}
    </FormRow>
  );
}

function ResetPeriodRow({ idPrefix, period, setPeriod, note }: { idPrefix: string; period: ResetPeriod; setPeriod: (p: ResetPeriod) => void; note?: ReactNode }) {
  return (
    <FormRow label="Byte caps renew" htmlFor={`${idPrefix}-reset`}>
      <select id={`${idPrefix}-reset`} value={period} aria-describedby={`${idPrefix}-reset-help`} onChange={(e) => setPeriod(e.target.value as ResetPeriod)}>
        {PERIODS.map((p) => (
          <option key={p.value} value={p.value}>
            {p.label}
          </option>
        ))}
      </select>
      <p id={`${idPrefix}-reset-help`} className="help">
        {period === 'none'
          ? 'The byte caps count everything ever moved.'
          : period === 'rolling_30d'
            ? 'The byte caps count the last 30 days; over them, connections are refused until older traffic falls out of the window.'
            : 'The byte caps count from the start of the period; over them, connections are refused until it renews, by itself.'}
      </p>
      {note ? <p className="help limit-source">{note}</p> : null}
    </FormRow>
  );
}

export interface LimitsFormState {
  load: 'idle' | 'loading' | 'ready' | 'error' | 'unset' | 'forbidden';
  record: AnyRecord;
  error: ApiErrorInfo | null;
  saving: boolean;
}

export interface LimitsFormProps {
  /** The inputs' ids start with it: `limit-client` gives `limit-client-downloaded_bytes`. */
  idPrefix: string;
  /** The form's accessible name. */
  title: string;
  fields: FormField[];
  st: LimitsFormState;
  /** The notice while no record exists. */
  unset: ReactNode;
  saveLabel: string;
  deleteLabel: string;
  onSave(body: LimitsUpdate): Promise<boolean>;
  onDelete(): void;
  onRetry(): void;
  /** Beside each field (and the period): the value in force and where it comes from. */
  note?: (field: FormField | 'reset_period') => ReactNode;
}

/** The change to send: each amount typed, each one emptied as null, the period when it changed. */
function changeOf(fields: FormField[], checks: Record<string, Check>, record: AnyRecord, period: ResetPeriod): LimitsUpdate {
  const body: Record<string, unknown> = {};
  for (const f of fields) {
    const v = checks[f]!.value;
    if (v !== null) body[f] = v;
    else if (record && record[f] !== undefined) body[f] = null;
  }
  if (period !== (record?.reset_period ?? 'none')) body.reset_period = period === 'none' ? null : period;
  return body as LimitsUpdate;
}

/** What the form held when it was sent: a field typed into since then keeps its text when the answer arrives. */
interface Sent {
  idPrefix: string;
  texts: Record<string, string>;
  period: ResetPeriod;
}

export function LimitsForm({ idPrefix, title, fields, st, unset, saveLabel, deleteLabel, onSave, onDelete, onRetry, note }: LimitsFormProps) {
  const [texts, setTexts] = useState<Record<string, string>>(() => toTexts(fields, st.record));
  const [submitted, setSubmitted] = useState(false);
  const [formError, setFormError] = useState<string | null>(null);
  const [period, setPeriod] = useState<ResetPeriod>(st.record?.reset_period ?? 'none');
  const sent = useRef<Sent | null>(null);
  useEffect(() => {
    // What was sent from this form (not from another tab's, whose answer resets everything).
    const was = sent.current?.idPrefix === idPrefix ? sent.current : null;
    sent.current = null;
    const stored = st.record?.reset_period ?? 'none';
    // The record's values, except where the person typed after sending (their text, not the server's echo, stays).
    const fresh = toTexts(fields, st.record);
    setTexts((now) => (was ? keepTyped(fields, now, was.texts, fresh) : fresh));
    setPeriod((now) => (was && now !== was.period ? now : stored));
    setSubmitted(false);
  }, [idPrefix, st.record]);

  if (st.load === 'loading' || st.load === 'idle') return <Spinner label="Loading the limits…" />;
  if (st.load === 'forbidden')
    return (
      <div className="notice" role="alert">
        <strong>Not allowed.</strong> This API token has the agent role, which can manage sessions but not limits (the server answered 403). Use an owner token to see and change limits.
      </div>
    );
  if (st.load === 'error') return <ErrorBanner error={st.error} onRetry={onRetry} />;

  const checks = Object.fromEntries(fields.map((f) => [f, validate(f, texts[f] ?? '')])) as Record<string, Check>;
  const invalid = fields.some((f) => checks[f]!.error);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setSubmitted(true);
    setFormError(null);
    if (invalid) return;
    const body = changeOf(fields, checks, st.record, period);
    if (!Object.keys(body).length) return setFormError('Enter at least one limit to save.');
    sent.current = { idPrefix, texts, period };
    if (!(await onSave(body))) sent.current = null; // refused: the record did not change
  };

  return (
    <form className="form" onSubmit={submit} noValidate aria-label={title}>
      {st.load === 'unset' ? (
        <p className="notice" data-testid="limits-unset">
          {unset}
        </p>
      ) : st.record ? (
        <p className="muted small">
          Record <span className="mono">{st.record.id.slice(0, 8)}</span> · created {formatDateTime(st.record.created_at)} · updated {formatDateTime(st.record.updated_at)}
        </p>
      ) : null}
      {fields.map((f) => (
        <LimitFieldRow key={f} idPrefix={idPrefix} field={f} text={texts[f] ?? ''} check={checks[f]!} showError={submitted} onChange={(v) => setTexts((t) => ({ ...t, [f]: v }))} note={note?.(f)} />
      ))}
      <ResetPeriodRow idPrefix={idPrefix} period={period} setPeriod={setPeriod} note={note?.('reset_period')} />
      <ErrorBanner error={formError} />
      <ErrorBanner error={st.error} />
      <div className="actions">
        <button type="submit" className="btn btn-primary" disabled={st.saving}>
          {saveLabel}
        </button>
        <button type="button" className="btn btn-danger" disabled={st.saving || st.load !== 'ready'} onClick={onDelete}>
          {deleteLabel}
        </button>
        {st.saving ? <Spinner label="Saving…" /> : null}
      </div>
    </form>
  );
}
