// A client's limits on its page: the limits form on the client's own override, and beside each
// field the value in force and where it comes from (this override, or the client limits
// template of Limits → Client). Removing the override lets the template apply again.
import { useEffect, type ReactNode } from 'react';
import type { Client, ClientLimitKey } from '../../../common/client-types.ts';
import { PERIODS, LimitsForm, readable, type FormField } from './LimitsForm.tsx';
import { FIELDS } from './LimitsScreen.tsx';
import { deleteClientLimits, loadClientLimits, saveClientLimits, useStore } from '../store/index.ts';
import { routeHref } from '../store/routing.ts';
import { selectClient, selectClientsLoad, selectOverride } from '../store/selectors.ts';

const OVERRIDE_FIELDS: FormField[] = FIELDS.client;
const IDLE = { load: 'idle', record: null, error: null, saving: false } as const;

/** "In force: 2.00 GB, from this override" / "…, from the template" / "No limit in force". */
function inForce(client: Client | undefined, field: ClientLimitKey): ReactNode {
  if (!client) return null;
  const v = client.limits[field];
  if (v === undefined || v === null) return 'In force: no limit (neither this override nor the template sets one).';
  const shown = field === 'reset_period' ? (PERIODS.find((p) => p.value === v)?.label ?? String(v)) : readable(field as FormField, v as number);
  const source = client.limit_sources[field];
  return (
    <>
      In force: <strong>{shown}</strong>, {source === 'override' ? <span className="source-override">from this client's override</span> : <span className="source-template">from the client limits template</span>}.
    </>
  );
}

export function ClientLimitsCard({ clientId }: { clientId: string }) {
  const st = useStore(selectOverride(clientId)) ?? IDLE;
  const client = useStore(selectClient(clientId));
  const load = useStore(selectClientsLoad);
  useEffect(() => {
    void loadClientLimits(clientId);
  }, [clientId]);
  if (load === 'unsupported') return null;
  return (
    <div className="card">
      <h2>Limits</h2>
      <p className="help">
        Each field left empty takes the value of the <a href={routeHref({ name: 'limits', scope: 'client' })}>client limits template</a>; a value here overrides it for {clientId} alone.
      </p>
      <LimitsForm
        idPrefix="override"
        title={`Limits of ${clientId}`}
        fields={OVERRIDE_FIELDS}
        st={st}
        unset={
          <>
            <strong>No override:</strong> {clientId} gets the client limits template. Fill in a field and save to override it for this client.
          </>
        }
        saveLabel="Save override"
        deleteLabel="Remove override"
        onSave={(body) => saveClientLimits(clientId, body)}
        onDelete={() => void deleteClientLimits(clientId)}
        onRetry={() => void loadClientLimits(clientId)}
        note={(f) => inForce(client, f)}
      />
    </div>
  );
}
