// Draws the app and tray icons as PNG files (no image tools needed): a rounded shield-like
// disc with a key hole; the tray's active variant is green, the idle one grey.
//   node scripts/make-icons.ts  ->  build/icon.png (512), build/icons/{tray-idle,tray-active}{,@2x}.png
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

function crc32(buf: Buffer): number {
  let c = ~0;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return ~c >>> 0;
}
function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}
function png(size: number, pixel: (x: number, y: number) => [number, number, number, number]): Buffer {
  const raw = Buffer.alloc((size * 4 + 1) * size);
  for (let y = 0; y < size; y++) {
    raw[y * (size * 4 + 1)] = 0;
    for (let x = 0; x < size; x++) raw.set(pixel(x, y), y * (size * 4 + 1) + 1 + x * 4);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8;
  ihdr[9] = 6;
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}
function icon(size: number, color: [number, number, number]): Buffer {
  return png(size, (x, y) => {
    const cx = (x + 0.5) / size - 0.5;
    const cy = (y + 0.5) / size - 0.5;
    const r = Math.hypot(cx, cy);
    const edge = 1 / size;
    const disc = Math.max(0, Math.min(1, (0.46 - r) / edge));
    // key hole: a circle and a slot, cut out
    const hole = Math.hypot(cx, cy + 0.08) < 0.11 || (Math.abs(cx) < 0.05 && cy > -0.08 && cy < 0.2);
    const a = hole ? 0 : disc;
    return [color[0], color[1], color[2], Math.round(a * 255)];
  });
}

const blue: [number, number, number] = [37, 87, 214];
const green: [number, number, number] = [26, 160, 70];
const grey: [number, number, number] = [128, 134, 142];
mkdirSync(join(ROOT, 'build', 'icons'), { recursive: true });
writeFileSync(join(ROOT, 'build', 'icon.png'), icon(512, blue));
for (const [name, color] of [['tray-idle', grey], ['tray-active', green]] as const) {
  writeFileSync(join(ROOT, 'build', 'icons', `${name}.png`), icon(16, color));
  writeFileSync(join(ROOT, 'build', 'icons', `${name}@2x.png`), icon(32, color));
}
console.log('icons written to build/');
