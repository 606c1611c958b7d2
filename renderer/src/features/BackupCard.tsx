// Settings → Backup. Desktop with the embedded server: "Back up…" (a native folder dialog; the copy is
// made while the server runs), "Restore from a backup…" (a folder dialog, then a confirmation; the
// server restarts on the restored data) and "Back up every day" (into a folder chosen once). A
// remote server, or web mode, is backed up where it runs: the card says with which commands.
import { useEffect } from 'react';
import { backupData, loadAutoBackup, restoreData, setAutoBackup, useStore } from '../store/index.ts';
import { ErrorBanner, Spinner, Switch } from '../components/ui.tsx';
import type { BackupProgress } from '../../../common/api-types.ts';
import { formatBytes, formatDateTime } from '../lib/format.ts';
import {
  selectAutoBackup,
  selectAutoBackupPending,
  selectBackupError,
  selectBackupPending,
  selectBackupProgress,
  selectConnection,
  selectLastBackup,
  selectLastRestore,
  selectPlatformKind,
} from '../store/selectors.ts';

function Elsewhere({ remote }: { remote: boolean }) {
  return (
    <>
      <p>
        {remote ? 'The app uses a remote server' : 'This page talks to a server started from the command line'}: back it up on the machine it runs on. A backup may be made
        while the server runs; a restore needs it stopped.
      </p>
      <pre className="code-block" aria-label="Commands to back up and restore the server">{`vpn-access backup --out /path/to/new-folder --data-dir DIR
vpn-access restore --from /path/to/new-folder --data-dir DIR`}</pre>
      <p className="help">A cluster on PostgreSQL is backed up with pg_dump: the database holds its keys too.</p>
    </>
  );
}

/** A running backup or restore: its step and the database's size, and the seconds of the step so far. */
function Working({ what, progress, otherwise }: { what: string; progress: BackupProgress | null; otherwise: string }) {
  if (!progress) return <Spinner label={otherwise} />;
  const step = `${progress.doing[0]?.toUpperCase() ?? ''}${progress.doing.slice(1)}`;
  return <Spinner label={`${what}. ${step} the database (${formatBytes(progress.bytes)})`} ticking={`: ${progress.seconds} s`} />;
}

/** "Back up every day": the switch, where, when last and next, or why the last one failed. */
function Daily() {
  const auto = useStore(selectAutoBackup);
  const pending = useStore(selectAutoBackupPending);
  // Turned on while the person's own backup or restore runs, its first backup would have to wait for the next check.
  const busy = useStore(selectBackupPending) !== null;
  useEffect(() => {
    void loadAutoBackup();
  }, []);
  if (!auto) return null;
  return (
    <div className="auto-backup">
      <Switch label="Back up every day" checked={auto.enabled} disabled={pending || busy} onChange={(on) => void setAutoBackup(on)} />
      {pending ? <Spinner label="Choosing the folder, then backing up…" /> : null}
      {auto.enabled ? (
        <p className="muted" data-testid="auto-backup">
          Into <span className="mono wrap">{auto.folder}</span>, keeping the newest {auto.keep}, while the app runs.
          {auto.last_at ? ` Last: ${formatDateTime(auto.last_at)}.` : ''}
          {auto.next_at && !auto.last_error ? ` Next: ${formatDateTime(auto.next_at)}.` : ''}
        </p>
      ) : null}
      {auto.enabled && auto.last_error ? <ErrorBanner error={`The last automatic backup failed: ${auto.last_error}. It is tried again every hour.`} /> : null}
    </div>
  );
}

export function BackupCard() {
  const kind = useStore(selectPlatformKind);
  const connection = useStore(selectConnection);
  const pending = useStore(selectBackupPending);
  const progress = useStore(selectBackupProgress);
  const dailyPending = useStore(selectAutoBackupPending);
  // Turning the daily backup on makes one at once: the buttons wait for it.
  const busy = pending !== null || dailyPending;
  const error = useStore(selectBackupError);
  const lastBackup = useStore(selectLastBackup);
  const lastRestore = useStore(selectLastRestore);
  const embedded = kind === 'electron' && connection?.mode === 'embedded';
  return (
    <div className="card" role="region" aria-labelledby="backup-title">
      <h2 id="backup-title">Backup</h2>
      {!embedded ? (
        <Elsewhere remote={kind === 'electron'} />
      ) : (
        <>
          <p className="help">
            A backup holds everything the app keeps: sessions, clients, limits, tokens, webhooks, and the keys that subscription URLs and webhook signatures depend on. Keep it
            where only you can read it.
          </p>
          {connection?.dataDir ? (
            <p className="muted small">
              Data folder: <span className="mono wrap">{connection.dataDir}</span>
            </p>
          ) : null}
          <div className="actions">
            <button type="button" className="btn primary" disabled={busy} aria-busy={pending === 'backup'} onClick={() => void backupData()}>
              Back up…
            </button>
            <button type="button" className="btn" disabled={busy} aria-busy={pending === 'restore'} onClick={() => void restoreData()}>
              Restore from a backup…
            </button>
          </div>
          <Daily />
          {pending === 'backup' ? <Working what="Backing up" progress={progress} otherwise="Backing up: copying and checking the database…" /> : null}
          {pending === 'restore' ? <Working what="Restoring" progress={progress} otherwise="Restoring: checking the backup, then restarting the server on it…" /> : null}
          <ErrorBanner error={error} />
          {lastBackup ? (
            <p className="muted" data-testid="last-backup">
              Last backup: {formatDateTime(lastBackup.made_at)}, into <span className="mono wrap">{lastBackup.folder}</span>
            </p>
          ) : null}
          {lastRestore ? (
            <p className="muted" data-testid="last-restore">
              Restored the backup of {formatDateTime(lastRestore.made_at)}
              {lastRestore.customer !== 'local' ? ` (customer ${lastRestore.customer})` : ''}.
              {lastRestore.replaced_into ? (
                <>
                  {' '}
                  The data it replaced is kept in <span className="mono wrap">{lastRestore.replaced_into}</span>.
                </>
              ) : null}
              {lastRestore.token_renewed ? ' The backup did not know the app’s API token, so a new owner token was made.' : ''}
            </p>
          ) : null}
        </>
      )}
    </div>
  );
}
