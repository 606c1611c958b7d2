// Settings → Subscription page: the support link, the profile web page and the announcement that
// every client's subscription carries (the page a browser opens shows the announcement and a "Get
// help" link; Hiddify, v2rayNG and Happ read them from the feed's headers). Checked here as the
// server checks them, each problem shown under its field; an agent token sees them read-only.
// Goes through the store's actions to the platform like every other screen.
import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { humanError } from '../lib/errors.ts';
import { loadSubscriptionSettings, saveSubscriptionSettings, toApiError, useStore } from '../store/index.ts';
import { selectSignedInToken } from '../store/selectors.ts';
import { ErrorBanner, FormRow, Spinner } from '../components/ui.tsx';
import type { SubscriptionSettings } from '../../../common/api-types.ts';
import { keepTyped } from '../lib/form-answer.ts';
import { ANNOUNCE_MAX, changes, FIELDS, settingsProblems, valuesOf, type Field, type Problems, type Values } from '../lib/subscription-settings.ts';

/** The server's refusal, by field when it names them (details.fields), else one sentence. */
function serverProblems(e: unknown): { fields: Problems; general: string | null } {
  const err = toApiError(e);
  if (err.code === 'forbidden') return { fields: {}, general: 'Only an owner token can change the subscription page.' };
  const named = Array.isArray(err.details.fields) ? (err.details.fields as { field?: unknown; problem?: unknown }[]) : [];
  const fields: Problems = {};
  for (const p of named) if (FIELDS.includes(p.field as Field)) fields[p.field as Field] = `This ${String(p.problem)}.`;
  return Object.keys(fields).length ? { fields, general: null } : { fields: {}, general: humanError(err) };
}

type InputProps = { id: string; field: Field; label: string; help: string; values: Values; problems: Problems; readOnly: boolean; onChange: (f: Field, v: string) => void };

function UrlInput({ id, field, label, help, values, problems, readOnly, onChange }: InputProps) {
  const problem = problems[field];
  return (
    <FormRow label={label} htmlFor={id}>
      <input id={id} type="url" inputMode="url" value={values[field]} onChange={(e) => onChange(field, e.target.value)} readOnly={readOnly} placeholder="https://" aria-invalid={!!problem} aria-describedby={`${id}-help`} autoComplete="off" spellCheck={false} />
      <p id={`${id}-help`} className={problem ? 'help help-error' : 'help'}>
        {problem ?? help}
      </p>
    </FormRow>
  );
}

function AnnounceInput({ values, problems, readOnly, onChange }: Omit<InputProps, 'id' | 'field' | 'label' | 'help'>) {
  const problem = problems.announce;
  const count = [...values.announce].length;
  return (
    <FormRow label="Announcement" htmlFor="sub-announce">
      <textarea id="sub-announce" rows={3} value={values.announce} onChange={(e) => onChange('announce', e.target.value)} readOnly={readOnly} aria-invalid={!!problem} aria-describedby="sub-announce-help" />
      <p id="sub-announce-help" className={problem ? 'help help-error' : 'help'}>
        {problem ?? `Shown at the top of the page and in the apps, in any language. ${count} of ${ANNOUNCE_MAX} characters.`}
      </p>
    </FormRow>
  );
}

const EMPTY: Values = { support_url: '', profile_web_page_url: '', announce: '' };

/** The form's state: the values on screen, what the server holds, the problems by field, and Save. */
function useSettingsForm() {
  const [saved, setSaved] = useState<Values | null>(null);
  const [values, setValues] = useState<Values>(EMPTY);
  const [problems, setProblems] = useState<Problems>({});
  const [general, setGeneral] = useState<string | null>(null);
  const [status, setStatus] = useState('');
  const [busy, setBusy] = useState(false);
  /** The server's record, into every field not typed into since `sent` (a slow answer wipes nothing). */
  const show = (s: SubscriptionSettings, sent: Values) => {
    const fresh = valuesOf(s);
    setSaved(fresh);
    setValues((now) => keepTyped(FIELDS, now, sent, fresh));
  };
  const load = useCallback(async () => {
    try {
      show(await loadSubscriptionSettings(), EMPTY);
      setGeneral(null);
    } catch (e) {
      setGeneral(humanError(toApiError(e)));
    }
  }, []);
  useEffect(() => void load(), [load]);
  const onChange = (f: Field, v: string) => {
    setValues((old) => ({ ...old, [f]: v }));
    setProblems((old) => ({ ...old, [f]: undefined }));
    setStatus('');
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (busy || !saved) return;
    const found = settingsProblems({ ...values, support_url: values.support_url.trim(), profile_web_page_url: values.profile_web_page_url.trim() });
    setProblems(found);
    setGeneral(null);
    setStatus('');
    if (Object.keys(found).length) return;
    const body = changes(values, saved);
    if (!Object.keys(body).length) return setStatus('Nothing changed.');
    setBusy(true);
    try {
      show(await saveSubscriptionSettings(body), values);
      setStatus('Saved: every subscription carries it from its next update.');
    } catch (e2) {
      const refused = serverProblems(e2);
      setProblems(refused.fields);
      setGeneral(refused.general);
    } finally {
      setBusy(false);
    }
  };
  return { saved, values, problems, general, status, busy, onChange, submit };
}

export function SubscriptionPageCard() {
  const token = useStore(selectSignedInToken);
  const readOnly = token?.role === 'agent';
  const { saved, values, problems, general, status, busy, onChange, submit } = useSettingsForm();
  const common = { values, problems, readOnly, onChange };
  return (
    <div className="card" aria-labelledby="subscription-page-title" role="region">
      <h2 id="subscription-page-title">Subscription page</h2>
      <p className="muted">What every client&rsquo;s subscription carries besides its connections: the page a browser opens shows them, and Hiddify, v2rayNG and Happ show them in the app. Leave a field empty to leave it out.</p>
      {saved === null && !general ? <Spinner label="Loading…" /> : null}
      <form className="form" onSubmit={(e) => void submit(e)} noValidate>
        <UrlInput id="sub-support-url" field="support_url" label="Support URL" help='Where people get help: a "Get help" link on the page and in the apps.' {...common} />
        <UrlInput id="sub-profile-url" field="profile_web_page_url" label="Profile web page" help="A web page about your service, opened from the app." {...common} />
        <AnnounceInput {...common} />
        <ErrorBanner error={general} />
        {readOnly ? <p className="help">Only an owner token can change these.</p> : null}
        <div className="actions">
          <button type="submit" className="btn btn-primary" disabled={busy || readOnly || saved === null}>
            Save
          </button>
          {busy ? <Spinner label="Saving…" /> : null}
          <span role="status" className="muted">
            {status}
          </span>
        </div>
      </form>
    </div>
  );
}
