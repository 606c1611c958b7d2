// A tiny DNS responder on loopback for pebble's -dnsserver: every A question is answered with
// 127.0.0.1 (so the CA validates challenges against this machine); other types get no answers.
import { createSocket } from 'node:dgram';

export interface DnsResponder {
  port: number;
  /** Names asked for, lower case, in order. */
  asked: string[];
  close(): Promise<void>;
}

function readName(msg: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let i = offset;
  for (let guard = 0; guard < 128; guard++) {
    const len = msg[i];
    if (len === undefined) throw new Error('truncated name');
    if (len === 0) return { name: labels.join('.'), end: i + 1 };
    if ((len & 0xc0) !== 0) throw new Error('compressed question names are not expected');
    labels.push(msg.subarray(i + 1, i + 1 + len).toString('latin1'));
    i += 1 + len;
  }
  throw new Error('name too long');
}

export async function startDns(address = '127.0.0.1'): Promise<DnsResponder> {
  const socket = createSocket('udp4');
  const asked: string[] = [];
  socket.on('message', (msg, rinfo) => {
    try {
      if (msg.length < 12 || msg.readUInt16BE(4) !== 1) return;
      const { name, end } = readName(msg, 12);
      const qtype = msg.readUInt16BE(end);
      asked.push(name.toLowerCase());
      const question = msg.subarray(12, end + 4);
      const header = Buffer.alloc(12);
      msg.copy(header, 0, 0, 2); // id
      header.writeUInt16BE(0x8400 | (msg.readUInt16BE(2) & 0x0100), 2); // response, authoritative, RD copied
      header.writeUInt16BE(1, 4);
      const answers: Buffer[] = [];
      if (qtype === 1) {
        const rr = Buffer.alloc(16);
        rr.writeUInt16BE(0xc00c, 0); // the question's name
        rr.writeUInt16BE(1, 2); // A
        rr.writeUInt16BE(1, 4); // IN
        rr.writeUInt32BE(5, 6); // TTL
        rr.writeUInt16BE(4, 10);
        Buffer.from(address.split('.').map(Number)).copy(rr, 12);
        answers.push(rr);
      }
      header.writeUInt16BE(answers.length, 6);
      socket.send(Buffer.concat([header, question, ...answers]), rinfo.port, rinfo.address);
    } catch {
      // A malformed question gets no answer.
    }
  });
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()));
  return { port: socket.address().port, asked, close: () => new Promise<void>((r) => socket.close(() => r())) };
}
