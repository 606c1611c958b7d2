// Settings → Webhooks: the customer's endpoints (list, add, delete), the secret of a
// new endpoint shown once with a copy button, and each endpoint's last deliveries with the answer
// they got, and each endpoint's health (disabled by the server after failing, failing now, dropped
// deliveries) with a button to turn it on again. Owner tokens only: an agent token sees the API's
// 403 as a plain message. Goes through the store's actions to the platform (IPC in the desktop
// app, HTTP in web mode) like every other screen.
import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { humanError } from '../lib/errors.ts';
import { createWebhook, deleteWebhook, listWebhooks, setWebhookEnabled, toApiError, toast, webhookDeliveries } from '../store/index.ts';
import { CopyButton, EmptyState, FormRow, Spinner } from '../components/ui.tsx';
import { formatDateTime } from '../lib/format.ts';
import { webhookState } from '../lib/webhook-state.ts';
import type { Webhook, WebhookDelivery, WebhookEventKind } from '../../../common/api-types.ts';

/** The kinds, with what each means to a person (the API's names in code style beside). */
const KINDS: { kind: WebhookEventKind; label: string }[] = [
  { kind: 'session_start', label: 'Session started' },
  { kind: 'session_end', label: 'Session ended' },
  { kind: 'session_stats', label: 'Traffic counters' },
  { kind: 'session_heartbeat', label: 'Heartbeat' },
  { kind: 'session_paused', label: 'Paused' },
  { kind: 'session_resumed', label: 'Resumed' },
  { kind: 'cap_reached', label: 'Cap reached' },
  { kind: 'expired', label: 'Expired' },
  { kind: 'limits_changed', label: 'Limits changed' },
  { kind: 'webhook_disabled', label: 'Another webhook disabled' },
];

function Deliveries({ hook }: { hook: Webhook }) {
  const [rows, setRows] = useState<WebhookDelivery[] | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const load = useCallback(async () => {
    try {
      setRows((await webhookDeliveries(hook.id)).deliveries);
      setErr(null);
    } catch (e) {
      setErr(humanError(toApiError(e)));
    }
  }, [hook.id]);
  useEffect(() => void load(), [load]);
  if (err) return <p className="error-banner" role="alert">{err}</p>;
  if (!rows) return <Spinner label="Loading deliveries…" />;
  return (
    <div>
      <div className="actions">
        <button type="button" className="btn btn-small" onClick={() => void load()}>
          Refresh deliveries
        </button>
      </div>
      {rows.length === 0 ? (
        <p className="muted">No deliveries yet.</p>
      ) : (
        <table className="table table-cards" aria-label={`Last deliveries to ${hook.url}`}>
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Status</th>
              <th scope="col">Answer</th>
              <th scope="col">Attempts</th>
              <th scope="col">When</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((d) => (
              <tr key={d.id} data-testid="webhook-delivery">
                <td className="mono" data-label="Event">{d.event}</td>
                <td data-label="Status">{d.status === 'pending' && d.next_attempt_at ? `retrying ${formatDateTime(d.next_attempt_at)}` : d.status}</td>
                <td data-label="Answer">{d.response_status !== null ? `HTTP ${d.response_status}` : d.error ?? '—'}</td>
                <td data-label="Attempts">{d.attempts}</td>
                <td data-label="When">{formatDateTime(d.delivered_at ?? d.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function AddWebhook({ onAdded }: { onAdded: (secret: string) => void }) {
  const [url, setUrl] = useState('');
  const [kinds, setKinds] = useState<Set<WebhookEventKind>>(new Set(['session_start', 'session_end']));
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<string | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (kinds.size === 0) return setErr('Choose at least one event.');
    setBusy(true);
    try {
      const created = await createWebhook({ url: url.trim(), events: KINDS.map((k) => k.kind).filter((k) => kinds.has(k)) });
      setErr(null);
      setUrl('');
      onAdded(created.secret);
    } catch (e2) {
      setErr(humanError(toApiError(e2)));
    } finally {
      setBusy(false);
    }
  };
  const toggle = (k: WebhookEventKind, on: boolean) => {
    const next = new Set(kinds);
    if (on) next.add(k);
    else next.delete(k);
    setKinds(next);
  };
  return (
    <form onSubmit={(e) => void submit(e)} aria-label="Add a webhook">
      <FormRow label="Endpoint URL" htmlFor="webhook-url">
        <input id="webhook-url" type="url" required value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://example.com/hooks/vpn" />
      </FormRow>
      <fieldset className="webhook-kinds">
        <legend>Events</legend>
        <div className="checkbox-grid">
          {KINDS.map(({ kind, label }) => (
            <label key={kind} className="checkbox">
              <input type="checkbox" checked={kinds.has(kind)} onChange={(e) => toggle(kind, e.target.checked)} />
              {label}
            </label>
          ))}
        </div>
      </fieldset>
      {err ? (
        <div className="error-banner" role="alert">
          {err}
        </div>
      ) : null}
      <div className="actions">
        <button type="submit" className="btn btn-primary" disabled={busy}>
          Add webhook
        </button>
        {busy ? <Spinner label="Adding…" /> : null}
      </div>
    </form>
  );
}

/** A new endpoint's signing secret, shown once. */
function SecretNotice({ secret, onDone }: { secret: string; onDone: () => void }) {
  return (
    <div className="notice" role="status" data-testid="webhook-secret">
      <p>
        <strong>Signing secret</strong> (shown only now; copy it to your receiver):
      </p>
      <p className="mono wrap">{secret}</p>
      <div className="actions">
        <CopyButton label="Copy secret" text={secret} />
        <button type="button" className="btn btn-small" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

type ItemProps = { hook: Webhook; open: boolean; onToggle: () => void; onEnabled: (on: boolean) => void; onRemove: () => void };

/** One endpoint: its URL, health, events and actions, and its deliveries when opened. */
function WebhookItem({ hook: h, open, onToggle, onEnabled, onRemove }: ItemProps) {
  const state = webhookState(h);
  return (
    <li data-testid="webhook-row">
      <div className="webhook-head">
        <span className="mono wrap">{h.url}</span>
        <span className={`badge badge-webhook-${state.badge}`} data-testid="webhook-state">
          {state.label}
        </span>
        <span className="muted">{h.events.join(', ')}</span>
        <span className="muted">secret {h.secret_prefix}…</span>
        <div className="actions">
          <button
            type="button"
            className="btn btn-small"
            aria-label={`${h.enabled ? 'Turn off' : 'Enable'} webhook ${h.url}`}
            onClick={() => onEnabled(!h.enabled)}
          >
            {h.enabled ? 'Turn off' : 'Enable'}
          </button>
          <button type="button" className="btn btn-small" aria-expanded={open} onClick={onToggle}>
            {open ? 'Hide deliveries' : 'Show deliveries'}
          </button>
          <button type="button" className="btn btn-small btn-danger" aria-label={`Delete webhook ${h.url}`} onClick={onRemove}>
            Delete
          </button>
        </div>
      </div>
      {state.detail ? (
        <p className={state.badge === 'disabled' ? 'error-banner' : 'muted'} role={state.badge === 'disabled' ? 'alert' : undefined} data-testid="webhook-health">
          {state.detail}
        </p>
      ) : null}
      {state.dropped ? <p className="muted">{state.dropped}</p> : null}
      {open ? <Deliveries hook={h} /> : null}
    </li>
  );
}

export function WebhooksCard() {
  const [hooks, setHooks] = useState<Webhook[] | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const toggle = (id: string) => {
    const next = new Set(open);
    if (!next.delete(id)) next.add(id);
    setOpen(next);
  };
  const load = useCallback(async () => {
    try {
      setHooks((await listWebhooks()).webhooks);
      setErr(null);
    } catch (e) {
      setErr(humanError(toApiError(e)));
    }
  }, []);
  useEffect(() => void load(), [load]);
  const remove = async (h: Webhook) => {
    if (!window.confirm(`Delete the webhook to ${h.url}? Its pending deliveries are dropped.`)) return;
    try {
      await deleteWebhook(h.id);
      toast('Webhook deleted', 'info');
      await load();
    } catch (e) {
      toast(humanError(toApiError(e)), 'error');
    }
  };
  const setEnabled = async (h: Webhook, enabled: boolean) => {
    try {
      await setWebhookEnabled(h.id, enabled);
      toast(enabled ? 'Webhook enabled' : 'Webhook turned off', 'info');
      await load();
    } catch (e) {
      toast(humanError(toApiError(e)), 'error');
    }
  };
  return (
    <div className="card" aria-labelledby="webhooks-title" role="region">
      <h2 id="webhooks-title">Webhooks</h2>
      <p className="muted">
        The server POSTs each chosen event to your URL, signed: check <code>X-VAD-Signature</code> (<code>t=…,v1=…</code>, HMAC-SHA256 of
        <code> t.body</code> with the secret). Failed deliveries are retried with backoff; a session&apos;s events arrive in order. An endpoint
        that keeps failing is disabled by the server until you enable it again.
      </p>
      {secret ? <SecretNotice secret={secret} onDone={() => setSecret(null)} /> : null}
      {err ? (
        <div className="error-banner" role="alert">
          {err}
        </div>
      ) : null}
      {hooks === null && !err ? <Spinner label="Loading webhooks…" /> : null}
      {hooks && hooks.length === 0 ? (
        <EmptyState title="No webhooks yet">Add an endpoint below to receive session events as they happen.</EmptyState>
      ) : null}
      {hooks && hooks.length > 0 ? (
        <ul className="webhook-list" aria-label="Webhooks">
          {hooks.map((h) => (
            <WebhookItem key={h.id} hook={h} open={open.has(h.id)} onToggle={() => toggle(h.id)} onEnabled={(on) => void setEnabled(h, on)} onRemove={() => void remove(h)} />
          ))}
        </ul>
      ) : null}
      <h3>Add a webhook</h3>
      <AddWebhook
        onAdded={(s) => {
          setSecret(s);
          void load();
        }}
      />
    </div>
  );
}
