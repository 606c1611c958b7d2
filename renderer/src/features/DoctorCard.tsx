// Settings → Doctor: runs the checks the server can run about itself (GET /v2/doctor, owner
// tokens) and lists them with a pass/warn/fail badge in words, the finding, and the fix under
// warnings and failures. The same report as `vpn-access doctor --json` (docs/cli.md).
import { useState } from 'react';
import type { DoctorReport } from '../../../common/api-types.ts';
import type { ApiErrorInfo } from '../../../common/result.ts';
import { runDoctor, toApiError } from '../store/index.ts';
import { ErrorBanner } from '../components/ui.tsx';

const BADGE = { pass: 'Pass', warn: 'Warning', fail: 'Fail' } as const;

function summaryText(r: DoctorReport): string {
  const s = r.summary;
  const head = `${s.pass} passed, ${s.warn} warning${s.warn === 1 ? '' : 's'}, ${s.fail} failed`;
  if (s.fail) return `${head}: clients will fail until the failures are fixed.`;
  return s.warn ? `${head}: clients can connect; read the warnings.` : `${head}: nothing found that stops clients.`;
}

export function DoctorCard() {
  const [report, setReport] = useState<DoctorReport | null>(null);
  const [err, setErr] = useState<ApiErrorInfo | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async () => {
    setBusy(true);
    try {
      setReport(await runDoctor());
      setErr(null);
    } catch (e) {
      setErr(toApiError(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="card" data-testid="doctor-card" role="region" aria-labelledby="doctor-title" aria-busy={busy}>
      <h2 id="doctor-title">Doctor</h2>
      <p className="muted">
        Checks what makes clients fail before they connect: the ports reached at the public host, the certificate and the pin in links,
        egress, the database, the nodes of each zone and the zone catalogue. Owner tokens only.
      </p>
      <div className="actions">
        <button type="button" className="btn" onClick={() => void run()} disabled={busy}>
          {busy ? 'Checking…' : report ? 'Run the checks again' : 'Run the checks'}
        </button>
      </div>
      <ErrorBanner error={err} />
      {report ? (
        <>
          <p data-testid="doctor-summary" role="status">{summaryText(report)}</p>
          <ul className="doctor-checks">
            {report.checks.map((c) => (
              <li key={c.id} data-testid={`doctor-${c.id}`}>
                <span className={`badge badge-check-${c.status}`}>{BADGE[c.status]}</span> <strong>{c.title}</strong>: {c.detail}
                {c.status !== 'pass' && c.fix ? <div className="muted">Fix: {c.fix}</div> : null}
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </div>
  );
}
