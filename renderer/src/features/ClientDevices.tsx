// The devices that fetched a client's subscription (told apart by the hardware id their app
// sends): model, system, first and last seen, each with Remove (it then counts against the
// device limit no more; it comes back if it fetches again while the limit allows it).
import { useEffect } from 'react';
import { formatDateTime } from '../lib/format.ts';
import { loadDevices, removeDevice, useStore } from '../store/index.ts';
import { selectDevices } from '../store/selectors.ts';
import { EmptyState, ErrorBanner, Spinner } from '../components/ui.tsx';

export function ClientDevicesCard({ clientId }: { clientId: string }) {
  const entry = useStore(selectDevices(clientId));
  useEffect(() => {
    void loadDevices(clientId);
    const t = setInterval(() => void loadDevices(clientId), 15_000);
    return () => clearInterval(t);
  }, [clientId]);
  return (
    <div className="card">
      <h2>Devices</h2>
      {!entry || entry.load === 'idle' || (entry.load === 'loading' && entry.devices.length === 0) ? (
        <Spinner label="Loading the devices…" />
      ) : entry.load === 'error' && entry.devices.length === 0 ? (
        <ErrorBanner error={entry.error} onRetry={() => void loadDevices(clientId)} />
      ) : entry.devices.length === 0 ? (
        <EmptyState title="No devices yet">
          <p>A device appears here when its VPN app fetches this client's subscription.</p>
        </EmptyState>
      ) : (
        <>
          <ErrorBanner error={entry.error} />
          <table className="events table-cards devices-table" aria-label={`Devices of ${clientId}`}>
            <thead>
              <tr aria-label="Columns">
                <th scope="col">Model</th>
                <th scope="col">System</th>
                <th scope="col">First seen</th>
                <th scope="col">Last seen</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {entry.devices.map((d) => {
                const name = d.device_model || d.user_agent || `device ${d.hwid.slice(0, 8)}`;
                return (
                  <tr key={d.hwid} data-hwid={d.hwid} aria-label={`Device ${name}`}>
                    <td data-label="Model" title={d.user_agent ?? undefined}>
                      {d.device_model || <span className="muted">unknown model</span>}
                    </td>
                    <td data-label="System">{[d.device_os, d.os_version].filter(Boolean).join(' ') || <span className="muted">unknown</span>}</td>
                    <td data-label="First seen">{formatDateTime(d.first_seen)}</td>
                    <td data-label="Last seen">{formatDateTime(d.last_seen)}</td>
                    <td data-label="">
                      <button type="button" className="btn btn-small btn-danger" disabled={entry.removing === d.hwid} aria-label={`Remove device ${name}`} onClick={() => void removeDevice(clientId, d.hwid)}>
                        Remove
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}
