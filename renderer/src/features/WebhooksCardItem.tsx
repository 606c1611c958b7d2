// One endpoint of Settings → Webhooks: its URL, health badge ("Failing", "Disabled" with the
// server's reason), the last error and when in words, the next retry while it lies ahead, its
// actions (Send test with what came back, turn off or on, deliveries, delete) and, when opened,
// its last deliveries with the answers they got. Reaches the platform through store actions only.
import { useCallback, useEffect, useState } from 'react';
import { humanError } from '../lib/errors.ts';
import { testWebhook, toApiError, webhookDeliveries } from '../store/index.ts';
import { ErrorBanner, Spinner } from '../components/ui.tsx';
import { formatDateTime } from '../lib/format.ts';
import { deliveryStatus, errorWords, testResultText, webhookState } from '../lib/webhook-state.ts';
import type { Webhook, WebhookDelivery } from '../../../common/api-types.ts';

function DeliveryRows({ hook, rows }: { hook: Webhook; rows: WebhookDelivery[] }) {
  const now = Date.now();
  return (
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
            <td data-label="Status">{deliveryStatus(d, now)}</td>
            <td data-label="Answer">{d.response_status !== null ? `HTTP ${d.response_status}` : d.error ? errorWords(d.error) : '—'}</td>
            <td data-label="Attempts">{d.attempts}</td>
            <td data-label="When">{formatDateTime(d.delivered_at ?? d.created_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

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
  if (err) return <ErrorBanner error={err} onRetry={() => void load()} />;
  if (!rows) return <Spinner label="Loading deliveries…" />;
  return (
    <div>
      <div className="actions">
        <button type="button" className="btn btn-small" onClick={() => void load()}>
          Refresh deliveries
        </button>
      </div>
      {rows.length === 0 ? <p className="muted">No deliveries yet.</p> : <DeliveryRows hook={hook} rows={rows} />}
    </div>
  );
}

/** "Send test": one signed test delivery now, and what came back. */
function useSendTest(id: string) {
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const run = async () => {
    setBusy(true);
    setResult(null);
    try {
      setResult(testResultText(await testWebhook(id)));
    } catch (e) {
      setResult({ ok: false, text: `Failed: ${humanError(toApiError(e))}` });
    } finally {
      setBusy(false);
    }
  };
  return { busy, result, run };
}

type ItemProps = { hook: Webhook; open: boolean; onToggle: () => void; onEnabled: (on: boolean) => void; onRemove: () => void };

function Health({ hook: h }: { hook: Webhook }) {
  const state = webhookState(h);
  const disabled = state.badge === 'disabled';
  return (
    <>
      {state.detail ? (
        <p className={disabled ? 'error-banner' : 'muted'} role={disabled ? 'alert' : undefined} data-testid="webhook-health">
          {state.detail}
        </p>
      ) : null}
      {state.lastError || state.nextRetry ? (
        <p className="muted" data-testid="webhook-last-error">
          {[state.lastError, state.nextRetry].filter(Boolean).join(' · ')}
        </p>
      ) : null}
      {state.dropped ? <p className="muted">{state.dropped}</p> : null}
    </>
  );
}

/** One endpoint: its URL, health, events and actions, and its deliveries when opened. */
export function WebhookItem({ hook: h, open, onToggle, onEnabled, onRemove }: ItemProps) {
  const state = webhookState(h);
  const test = useSendTest(h.id);
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
          <button type="button" className="btn btn-small" aria-label={`Send test to ${h.url}`} disabled={test.busy} onClick={() => void test.run()}>
            {test.busy ? 'Sending…' : 'Send test'}
          </button>
          <button type="button" className="btn btn-small" aria-label={`${h.enabled ? 'Turn off' : 'Enable'} webhook ${h.url}`} onClick={() => onEnabled(!h.enabled)}>
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
      <p className={`webhook-test ${test.result ? (test.result.ok ? 'webhook-test-ok' : 'webhook-test-failed') : ''}`} role="status" data-testid="webhook-test-result">
        {test.result?.text ?? ''}
      </p>
      <Health hook={h} />
      {open ? <Deliveries hook={h} /> : null}
    </li>
  );
}
