// Validates an uploaded image by its content: a static JPEG, PNG or WebP of at most 16 megapixels that
// decodes without errors. The declared Content-Type is only checked against what the bytes are.
import sharp, { type Metadata } from 'sharp';

export type ImageMediaType = 'image/jpeg' | 'image/png' | 'image/webp';
export interface InspectedImage {
  mediaType: ImageMediaType;
  width: number;
  height: number;
}
export type ImageRejection = {
  status: 400 | 415;
  reason: 'empty' | 'unsupported_format' | 'animated' | 'too_many_pixels' | 'invalid_image' | 'type_mismatch';
  message: string;
};

export const MAX_IMAGE_PIXELS = 16_000_000;

// Each upload is decoded once and never again, so libvips' operation cache would only hold on to
// untrusted buffers and memory. One libvips thread per image: parallelism comes from concurrent
// uploads on libuv's pool, and extra threads per (small) image would only oversubscribe the cores.
sharp.cache(false);
sharp.concurrency(1);

const UNSUPPORTED_MESSAGE = 'unsupported or invalid image, animation, or over 16 megapixels';
// A 16 MP decode takes ~0.1-0.4 s here; this only stops a pathological file from holding a worker.
const DECODE_TIMEOUT_SECONDS = 5;

const SHARP_FORMAT: Record<ImageMediaType, string> = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp' };
// Spellings clients send for the same formats.
const DECLARED_ALIASES: Record<string, ImageMediaType> = {
  'image/jpeg': 'image/jpeg',
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'image/png': 'image/png',
  'image/x-png': 'image/png',
  'image/webp': 'image/webp',
};

const reject = (reason: Exclude<ImageRejection['reason'], 'empty'>): ImageRejection => ({
  status: 415,
  reason,
  message: UNSUPPORTED_MESSAGE,
});

/**
 * Checks, cheapest first, so that each step only sees input the earlier ones accepted:
 * 1. empty → 400;
 * 2. our own magic-byte sniff: libvips never sees anything that is not JPEG/PNG/WebP, so its other
 *    loaders (SVG, HEIF, TIFF, PDF, GIF...) are out of reach of untrusted bytes;
 * 3. animation from the chunk list (APNG acTL, WebP VP8X flag / ANIM), by our own code: libvips does
 *    not report APNG frames, and libwebp refuses some animated files outright, which would blur the reason;
 * 4. dimensions from the header only (sharp's metadata() does not decode pixels) → pixel limit, so a
 *    decompression bomb is refused before any pixel is decoded; `pages > 1` as a second animation check;
 * 5. the declared type against the sniffed one;
 * 6. one full decode, bounded by the pixel limit, which catches truncated and corrupt files.
 */
export async function inspectImage(bytes: Uint8Array, declaredType: string | null): Promise<InspectedImage | ImageRejection> {
  if (bytes.length === 0) return { status: 400, reason: 'empty', message: 'The file is empty' };
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength); // a view, not a copy

  const mediaType = sniff(buf);
  if (!mediaType) return reject('unsupported_format');
  if ((mediaType === 'image/png' && isApng(buf)) || (mediaType === 'image/webp' && isAnimatedWebp(buf))) return reject('animated');

  // limitInputPixels: false so the header is read whatever it claims; the limit is applied below.
  let meta: Metadata;
  try {
    meta = await sharp(buf, { limitInputPixels: false }).metadata();
  } catch {
    return reject('invalid_image');
  }
  // libvips picks its loader by its own sniffing; it must agree with ours.
  if (meta.format !== SHARP_FORMAT[mediaType] || !meta.width || !meta.height) return reject('invalid_image');
  const { width, height } = meta;
  if (width * height > MAX_IMAGE_PIXELS) return reject('too_many_pixels');

  if ((meta.pages ?? 1) > 1) return reject('animated');

  const declared = declaredImageType(declaredType);
  if (declared !== null && declared !== mediaType) return reject('type_mismatch');

  try {
    // failOn 'error': truncation and decoder errors (bad PNG CRC/zlib data, broken WebP) fail; bare
    // libjpeg warnings ("extraneous bytes before marker", common from phones/CCTV/scanners, shown fine
    // by browsers) do not. We store the original bytes and never re-encode, so such a file harms nobody.
    // Only channel 0 is written out: the loader still decodes every pixel, but the output buffer is a
    // quarter of RGBA (a 16 MP decode: ~42 ms and ~70 MB peak instead of ~69 ms and ~150 MB).
    await sharp(buf, { limitInputPixels: MAX_IMAGE_PIXELS, failOn: 'error' })
      .timeout({ seconds: DECODE_TIMEOUT_SECONDS })
      .extractChannel(0)
      .raw()
      .toBuffer();
  } catch {
    return reject('invalid_image');
  }
  return { mediaType, width, height };
}

function sniff(b: Buffer): ImageMediaType | null {
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.length >= 8 && b.readUInt32BE(0) === 0x89504e47 && b.readUInt32BE(4) === 0x0d0a1a0a) return 'image/png';
  if (b.length >= 12 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') return 'image/webp';
  return null;
}

/**
 * The declared type as an image format, or null when it says nothing about one. Only a concrete
 * `image/...` type is a claim: busboy reports a part without Content-Type as `text/plain`, and
 * `application/octet-stream` means "unknown", so neither can contradict the content.
 */
function declaredImageType(declaredType: string | null): ImageMediaType | 'other-image' | null {
  const type = (declaredType ?? '').split(';')[0].trim().toLowerCase();
  if (!type.startsWith('image/') || type === 'image/*') return null;
  return DECLARED_ALIASES[type] ?? 'other-image';
}

/** APNG: an `acTL` chunk before the first IDAT (after it, decoders ignore it and the image is static). */
function isApng(b: Buffer): boolean {
  for (let off = 8; off + 8 <= b.length; ) {
    const length = b.readUInt32BE(off);
    const type = b.toString('latin1', off + 4, off + 8);
    if (type === 'acTL') return true;
    if (type === 'IDAT') return false;
    off += 12 + length;
  }
  return false;
}

/** Animated WebP: the VP8X animation flag, or ANIM/ANMF chunks (libwebp also reports them as pages). */
function isAnimatedWebp(b: Buffer): boolean {
  for (let off = 12; off + 8 <= b.length; ) {
    const fourcc = b.toString('latin1', off, off + 4);
    const size = b.readUInt32LE(off + 4);
    if (fourcc === 'VP8X' && off + 8 < b.length && (b[off + 8] & 0x02) !== 0) return true;
    if (fourcc === 'ANIM' || fourcc === 'ANMF') return true;
    off += 8 + size + (size & 1); // chunks are padded to an even size
  }
  return false;
}
