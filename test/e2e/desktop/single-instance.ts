// The stand-in's app.requestSingleInstanceLock, real across processes as Electron's is:
// a lock file in the user-data folder names the holder's pid, and the holder listens on a
// local socket beside it. A second process that finds a live holder writes its argv and
// working directory to that socket (the first emits 'second-instance') and is refused.
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';

export interface SecondInstanceMessage {
  argv: string[];
  cwd: string;
  additionalData: unknown;
}

export interface InstanceLock {
  /** True when this process holds the lock. */
  held: boolean;
  /** Resolves once a refused instance has told the holder (or failed to). */
  notified: Promise<void>;
  release(): void;
}

// Locks this process holds, by folder: a second app in the same process is refused too.
const heldHere = new Set<string>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock file atomically (O_EXCL); a lock whose pid is gone is stale and taken over. */
function takeLockFile(file: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number(readFileSync(file, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0 && (pid === process.pid || alive(pid))) return false;
      rmSync(file, { force: true });
    }
  }
  return false;
}

export function requestLock(userData: string, message: SecondInstanceMessage, onSecondInstance: (m: SecondInstanceMessage) => void): InstanceLock {
  const lockFile = join(userData, 'SingletonLock');
  const socketPath = join(userData, 'SingletonSocket');
  if (!heldHere.has(userData) && takeLockFile(lockFile)) {
    heldHere.add(userData);
    rmSync(socketPath, { force: true });
    const server: Server = createServer((sock) => {
      let buf = '';
      sock.setEncoding('utf8');
      sock.on('data', (d) => (buf += d));
      sock.on('end', () => {
        try {
          onSecondInstance(JSON.parse(buf) as SecondInstanceMessage);
        } catch {
          /* a malformed message is ignored, as Electron ignores it */
        }
        sock.end();
      });
      sock.on('error', () => {});
    });
    server.listen(socketPath);
    server.unref();
    return {
      held: true,
      notified: Promise.resolve(),
      release() {
        server.close();
        rmSync(socketPath, { force: true });
        rmSync(lockFile, { force: true });
        heldHere.delete(userData);
      },
    };
  }
  const notified = new Promise<void>((resolve) => {
    const sock = connect(socketPath, () => sock.end(JSON.stringify(message)));
    sock.on('close', () => resolve());
    sock.on('error', () => resolve());
    setTimeout(resolve, 3000).unref();
  });
  return { held: false, notified, release() {} };
}
