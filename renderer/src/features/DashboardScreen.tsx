// The customer dashboard: the customer's traffic over the chosen range (totals, the
// chart of every session together) and the clients that moved the most bytes, each a link to
// its client page (its sessions and its own chart).
import { formatBytes } from '../lib/format.ts';
import { rangeDef } from '../lib/usage.ts';
import { routeHref } from '../store/routing.ts';
import { RangePicker, UsageView, useRangeChoice, useUsage } from '../components/UsageChart.tsx';
import { Screen, Spinner } from '../components/ui.tsx';
import type { UsageReport } from '../../../common/api-types.ts';

function Totals({ report }: { report: UsageReport | null }) {
  const up = report?.totals.uploaded_bytes;
  const down = report?.totals.downloaded_bytes;
  const cell = (label: string, v: number | undefined, testId: string) => (
    <div className="total">
      <dt>{label}</dt>
      <dd data-testid={testId} data-value={v ?? ''}>
        {v === undefined ? '…' : formatBytes(v)}
      </dd>
    </div>
  );
  return (
    <dl className="totals" aria-label="Totals of the range">
      {cell('↓ Downloaded', down, 'total-downloaded')}
      {cell('↑ Uploaded', up, 'total-uploaded')}
      {cell('Together', up === undefined || down === undefined ? undefined : up + down, 'total-bytes')}
    </dl>
  );
}

function TopClients({ report, rangeLabel }: { report: UsageReport; rangeLabel: string }) {
  const top = report.top_clients ?? [];
  if (top.length === 0) return <p className="muted">No client moved any bytes in the {rangeLabel}.</p>;
  const max = Math.max(...top.map((c) => c.uploaded_bytes + c.downloaded_bytes), 1);
  return (
    <table className="events top-clients" aria-label={`Top clients, ${rangeLabel}`}>
      <thead>
        <tr>
          <th scope="col">Client</th>
          <th scope="col" className="c-num">↓ Downloaded</th>
          <th scope="col" className="c-num">↑ Uploaded</th>
          <th scope="col" className="c-num">Together</th>
          <th scope="col" className="share-col">
            <span className="sr-only">Share of the busiest client</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {top.map((c) => {
          const sum = c.uploaded_bytes + c.downloaded_bytes;
          return (
            <tr key={c.client_id} data-client-id={c.client_id}>
              <td data-label="Client">
                <a href={routeHref({ name: 'client', id: c.client_id })} aria-label={`Client ${c.client_id}: sessions and usage`}>
                  {c.client_id}
                </a>
              </td>
              <td className="c-num" data-label="↓ Downloaded">{formatBytes(c.downloaded_bytes)}</td>
              <td className="c-num" data-label="↑ Uploaded">{formatBytes(c.uploaded_bytes)}</td>
              <td className="c-num" data-label="Together" data-value={sum}>{formatBytes(sum)}</td>
              <td className="share-col" aria-hidden="true">
                <span className="share-bar" style={{ width: `${Math.max(2, (sum / max) * 100)}%` }} />
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

export function DashboardScreen() {
  const [range, setRange] = useRangeChoice();
  const usage = useUsage({}, range);
  const r = rangeDef(range);
  const label = r.label.toLowerCase();
  return (
    <Screen
      name="dashboard"
      title="Dashboard"
      head={
        <>
          {usage.loading && usage.report ? <Spinner label="Refreshing…" /> : null}
          <span className="grow" />
          <RangePicker value={range} onChange={setRange} label="Range of the dashboard" />
        </>
      }
    >
      <div className="card">
        <h2>Traffic of all clients</h2>
        <Totals report={usage.report} />
        <UsageView usage={usage} range={range} subject="all clients" />
      </div>
      <div className="card">
        <h2>Top clients</h2>
        {usage.report ? <TopClients report={usage.report} rangeLabel={label} /> : usage.error ? <p className="muted">Shown once the usage loads.</p> : <Spinner label="Loading the top clients…" />}
      </div>
    </Screen>
  );
}
