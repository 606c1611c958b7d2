// Settings → Webhooks: the customer's endpoints (list, add, delete), the secret of a new endpoint
// shown once with a copy button, and each endpoint (WebhooksCardItem.tsx: its health, last error,
// next retry, Send test and last deliveries), read again every 10 s while shown. Owner tokens
// only: an agent token sees the API's 403 as a plain message. Goes through the store's actions to the platform (IPC in the desktop
// app, HTTP in web mode) like every other screen.
import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { humanError } from '../lib/errors.ts';
import { createWebhook, deleteWebhook, listWebhooks, setWebhookEnabled, toApiError, toast } from '../store/index.ts';
import { CopyButton, EmptyState, ErrorBanner, FormRow, Spinner } from '../components/ui.tsx';
import type { Webhook, WebhookEventKind } from '../../../common/api-types.ts';
import { WebhookItem } from './WebhooksCardItem.tsx';

/** Each kind with what it means to a person (the API's names in code style beside); typed so a new kind cannot be left out. */
const LABELS: Record<WebhookEventKind, string> = {
  session_start: 'Session started',
  session_end: 'Session ended',
  session_stats: 'Traffic counters',
  session_heartbeat: 'Heartbeat',
  session_paused: 'Paused',
  session_resumed: 'Resumed',
  cap_reached: 'Cap reached',
  usage_threshold: 'Usage at 50, 80, 100 % of a cap',
  expired: 'Expired',
  limits_changed: 'Limits changed',
  client_changed: 'Client changed',
  webhook_disabled: 'Another webhook disabled',
};
const KINDS = (Object.keys(LABELS) as WebhookEventKind[]).map((kind) => ({ kind, label: LABELS[kind] }));

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
      <ErrorBanner error={err} />
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
  useEffect(() => {
    void load();
    // Health changes by itself (retries, the server disabling an endpoint) and "5 minutes ago" ages.
    const t = setInterval(() => void load(), 10_000);
    return () => clearInterval(t);
  }, [load]);
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
        that keeps failing is disabled by the server until you enable it again. Send test posts one signed <code>test</code> delivery now and
        shows the answer.
      </p>
      {secret ? <SecretNotice secret={secret} onDone={() => setSecret(null)} /> : null}
      <ErrorBanner error={err} />
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
