// Child process of the durability test: a real listening server whose internal publisher
// persists events as fast as it can; each acknowledged event id is written to stdout
// (synchronously) only after publish() returned. The parent kills it with SIGKILL.
// fd 1 is non-blocking once the server has made process.stdout a stream: a full pipe answers
// EAGAIN, and the line is written again until all of it is out.
import { writeSync } from 'node:fs';
import { startServer } from '../../server/serve.ts';

const pause = new Int32Array(new SharedArrayBuffer(4));
function writeLine(text: string): void {
  const buf = Buffer.from(text);
  for (let off = 0; off < buf.length; ) {
    try {
      off += writeSync(1, buf, off);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      Atomics.wait(pause, 0, 0, 1); // the parent reads the pipe meanwhile
    }
  }
}
const dataDir = process.argv[2];
if (!dataDir) throw new Error('usage: publish-child.ts DATA_DIR');
const s = await startServer({ dataDir, host: '127.0.0.1', port: 0, dataPlane: null, vlessTcpPort: null, proxyPort: null });
const customerId = s.services.sqlite!.store.findToken(s.ownerToken!)!.customer_id;
writeLine(`ready ${s.baseUrl} ${s.ownerToken}\n`);
let n = 0;
const tick = () => {
  for (let i = 0; i < 20; i++) {
    const e = s.services.sqlite!.bus.publish({ customerId, sessionId: `durable-${n % 3}`, type: 'session_stats', duration: n, uploaded_bytes: n, downloaded_bytes: 2 * n });
    writeLine(`E ${e.id}\n`);
    n++;
  }
  setImmediate(tick);
};
tick();
