// A connection-churn load generator, run as its own process so that its work does not count
// against the server's event loop: opens `rate` new connections per second for `seconds`
// (bounded: at most `rate * seconds` connections, at most 1024 open at once), each one a
// plain-http request through the proxy or a VLESS tcp request, read until the server closes.
// Prints one JSON line: { started, answered, refused, errors }.
//   node churn-load.ts proxy|vless <server port> <session id> <target port> <rate> <seconds>
import { connect } from 'node:net';
import { buildVlessHeader } from '../../../server/dataplane/vless-header.ts';

const [mode, portText, id, targetText, rateText, secondsText] = process.argv.slice(2);
const port = Number(portText), target = Number(targetText), rate = Number(rateText), seconds = Number(secondsText);
const total = Math.floor(rate * seconds);
const MAX_OPEN = 1024;
const request = mode === 'proxy'
  ? Buffer.from(`GET http://127.0.0.1:${target}/file/small HTTP/1.1\r\nHost: 127.0.0.1:${target}\r\nProxy-Authorization: Basic ${Buffer.from(`${id}:${id}`).toString('base64')}\r\n\r\n`)
  : Buffer.concat([buildVlessHeader({ id, command: 'tcp', port: target, address: '127.0.0.1' }), Buffer.from(`GET /file/small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)]);

let started = 0, answered = 0, refused = 0, errors = 0, open = 0, skipped = 0;
function one(): void {
  started++;
  open++;
  const s = connect(port, '127.0.0.1');
  let first = Buffer.alloc(0);
  s.on('data', (b: Buffer) => { if (first.length < 64) first = Buffer.concat([first, b]); });
  s.on('error', () => { errors++; });
  s.on('close', () => {
    open--;
    const text = first.toString('latin1');
    // a relayed answer: the target's 200 (after the VLESS response header for vless)
    if (/HTTP\/1\.1 200/.test(text)) answered++;
    else refused++;
  });
  s.end(request);
}
const t0 = performance.now();
const timer = setInterval(() => {
  const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate));
  while (started + skipped < due) {
    if (open >= MAX_OPEN) { skipped++; continue; }
    one();
  }
  if (started + skipped >= total) {
    clearInterval(timer);
    const wait = setInterval(() => {
      if (open === 0 || performance.now() - t0 > (seconds + 10) * 1000) {
        clearInterval(wait);
        process.stdout.write(JSON.stringify({ started, skipped, answered, refused, errors, ms: Math.round(performance.now() - t0) }) + '\n');
        process.exit(0);
      }
    }, 20);
  }
}, 5);
