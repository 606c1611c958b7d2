// The client's quota warnings (50, 80, 100 % of a byte cap in force), on the client's page and
// the session detail: read from the client record (GET /v2/clients/{id}) when shown and every
// 10 s while shown, worded by lib/quota-words.ts. Nothing is shown under 50 % or on an error
// (the page's other cards tell a server that does not answer).
import { useEffect, useState } from 'react';
import { getClient } from '../store/index.ts';
import { quotaWarnings, type QuotaWarning } from '../lib/quota-words.ts';

const REFRESH_MS = 10_000;

export function QuotaNotice({ clientId }: { clientId: string }) {
  const [warnings, setWarnings] = useState<QuotaWarning[]>([]);
  useEffect(() => {
    let live = true;
    const load = () =>
      getClient(clientId).then(
        (c) => live && setWarnings(quotaWarnings(c)),
        () => live && setWarnings([]),
      );
    void load();
    const t = setInterval(() => void load(), REFRESH_MS);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [clientId]);
  if (warnings.length === 0) return null;
  return (
    <div className="quota-warnings" data-testid="quota-warnings">
      {warnings.map((w) => (
        <p key={w.direction} className={`notice quota-notice${w.threshold === 100 ? ' quota-full' : ''}`} role="status" data-threshold={w.threshold}>
          {w.text}
        </p>
      ))}
    </div>
  );
}
