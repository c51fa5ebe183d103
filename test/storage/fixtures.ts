// Image fixtures built in code (no binaries in git): hand-made PNG chunks for APNGs and crafted
// headers, and sharp for real images. Shared by the validator's unit tests and the upload tests.
import { crc32, deflateSync } from 'node:zlib';
import sharp from 'sharp';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([head, body, crc]);
}

function pngChunks(png: Buffer): { type: string; data: Buffer }[] {
  const chunks = [];
  for (let off = 8; off < png.length; ) {
    const length = png.readUInt32BE(off);
    chunks.push({ type: png.toString('latin1', off + 4, off + 8), data: png.subarray(off + 8, off + 8 + length) });
    off += 12 + length;
  }
  return chunks;
}

/** A PNG whose IHDR claims width x height (8-bit RGB) with a small IDAT: nothing else needs to be real. */
export function craftedPng(width: number, height: number, idat = deflateSync(Buffer.alloc(1024))): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type RGB
  return Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', ihdr), pngChunk('IDAT', idat), pngChunk('IEND', Buffer.alloc(0))]);
}

/** A two-frame APNG: acTL + fcTL before the first IDAT, then fcTL + fdAT for the second frame. */
export function apng(first: Buffer, second: Buffer, size: number): Buffer {
  const fcTL = (sequence: number) => {
    const b = Buffer.alloc(26);
    b.writeUInt32BE(sequence, 0);
    b.writeUInt32BE(size, 4); // width
    b.writeUInt32BE(size, 8); // height; x/y offsets 0
    b.writeUInt16BE(1, 20); // delay 1/10 s
    b.writeUInt16BE(10, 22);
    return pngChunk('fcTL', b);
  };
  const acTL = Buffer.alloc(8);
  acTL.writeUInt32BE(2, 0); // frames
  acTL.writeUInt32BE(0, 4); // loop forever
  let sequence = 0;
  const parts: Buffer[] = [PNG_SIGNATURE];
  let sawIdat = false;
  for (const { type, data } of pngChunks(first)) {
    if (type === 'IDAT' && !sawIdat) {
      parts.push(pngChunk('acTL', acTL), fcTL(sequence++));
      sawIdat = true;
    }
    if (type === 'IEND') {
      parts.push(fcTL(sequence++));
      for (const c of pngChunks(second).filter((c) => c.type === 'IDAT')) {
        const seq = Buffer.alloc(4);
        seq.writeUInt32BE(sequence++);
        parts.push(pngChunk('fdAT', Buffer.concat([seq, c.data])));
      }
    }
    parts.push(pngChunk(type, data));
  }
  return Buffer.concat(parts);
}

export const solid = (width: number, height: number, background = '#3a7') => sharp({ create: { width, height, channels: 3, background } });

/** A two-frame animated WebP (or GIF), as sharp writes them. */
export async function animated(format: 'webp' | 'gif'): Promise<Buffer> {
  const frames = await Promise.all(['#f00', '#00f'].map((c) => solid(32, 32, c).png().toBuffer()));
  const joined = sharp(frames, { join: { animated: true } });
  return format === 'webp' ? joined.webp().toBuffer() : joined.gif().toBuffer();
}
