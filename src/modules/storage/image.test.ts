import { deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { apng, craftedPng, solid } from '../../../test/storage/fixtures.js';
import { inspectImage, MAX_IMAGE_PIXELS } from './image.js';

let jpeg: Buffer;
let png: Buffer;
let webp: Buffer;

beforeAll(async () => {
  jpeg = await solid(120, 80).jpeg().toBuffer();
  png = await solid(90, 70).png().toBuffer();
  webp = await solid(64, 48).webp().toBuffer();
});

describe('inspectImage: accepted', () => {
  it('passes static JPEG, PNG and WebP with their media type and size', async () => {
    expect(await inspectImage(jpeg, 'image/jpeg')).toEqual({ mediaType: 'image/jpeg', width: 120, height: 80 });
    expect(await inspectImage(png, 'image/png')).toEqual({ mediaType: 'image/png', width: 90, height: 70 });
    expect(await inspectImage(webp, 'image/webp')).toEqual({ mediaType: 'image/webp', width: 64, height: 48 });
  });

  it('reads a Uint8Array view into a larger buffer by its own bounds', async () => {
    const backing = Buffer.concat([Buffer.from('junk before'), png, Buffer.from('junk after')]);
    const view = new Uint8Array(backing.buffer, backing.byteOffset + 11, png.length);
    expect(await inspectImage(view, null)).toMatchObject({ mediaType: 'image/png', width: 90 });
  });

  it('accepts an undeclared type: missing, application/octet-stream, busboy\'s text/plain default, image/*', async () => {
    for (const declared of [null, '', 'application/octet-stream', 'text/plain', 'image/*']) {
      expect(await inspectImage(jpeg, declared)).toMatchObject({ mediaType: 'image/jpeg' });
    }
  });

  it('accepts the declared type in any case, with parameters and common aliases', async () => {
    for (const declared of ['IMAGE/JPEG', 'image/jpeg; charset=binary', 'image/jpg', 'image/pjpeg']) {
      expect(await inspectImage(jpeg, declared)).toMatchObject({ mediaType: 'image/jpeg' });
    }
    expect(await inspectImage(png, 'image/x-png')).toMatchObject({ mediaType: 'image/png' });
  });

  it('accepts exactly 16,000,000 pixels (4000x4000), decoded in full', async () => {
    const big = await solid(4000, 4000).png({ compressionLevel: 1 }).toBuffer();
    expect(await inspectImage(big, null)).toEqual({ mediaType: 'image/png', width: 4000, height: 4000 });
  });

  it("uses failOn 'error': a JPEG with only a libjpeg warning (extraneous bytes before a marker) passes", async () => {
    const sos = jpeg.indexOf(Buffer.from([0xff, 0xda]));
    const warned = Buffer.concat([jpeg.subarray(0, sos), Buffer.from([0x00, 0x01]), jpeg.subarray(sos)]);
    // The fixture does trigger a warning: sharp's default ('warning') refuses it.
    await expect(sharp(warned).raw().toBuffer()).rejects.toThrow(/extraneous bytes/);
    expect(await inspectImage(warned, 'image/jpeg')).toMatchObject({ mediaType: 'image/jpeg', width: 120 });
  });
});

describe('inspectImage: rejected', () => {
  it('answers 400 empty for an empty file', async () => {
    expect(await inspectImage(new Uint8Array(0), 'image/png')).toEqual({ status: 400, reason: 'empty', message: 'The file is empty' });
  });

  it('refuses other formats by their content: text, SVG, GIF, TIFF, AVIF', async () => {
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>');
    const others = [
      Buffer.from('hello, this is not an image'),
      svg,
      await solid(16, 16).gif().toBuffer(),
      await solid(16, 16).tiff().toBuffer(),
      await solid(16, 16).avif({ effort: 0 }).toBuffer(),
    ];
    for (const bytes of others) {
      // Declared as an accepted type: the content decides.
      expect(await inspectImage(bytes, 'image/png')).toEqual({
        status: 415,
        reason: 'unsupported_format',
        message: 'unsupported or invalid image, animation, or over 16 megapixels',
      });
    }
  });

  it('refuses a JPEG declared as image/png, and a PNG declared as image/gif', async () => {
    expect(await inspectImage(jpeg, 'image/png')).toMatchObject({ status: 415, reason: 'type_mismatch' });
    expect(await inspectImage(png, 'image/gif')).toMatchObject({ status: 415, reason: 'type_mismatch' });
  });

  it('refuses an animated WebP and a GIF', async () => {
    const frames = await Promise.all(['#f00', '#00f'].map((c) => solid(32, 32, c).png().toBuffer()));
    const animated = await sharp(frames, { join: { animated: true } }).webp().toBuffer();
    expect((await sharp(animated).metadata()).pages).toBe(2); // the fixture is animated
    expect(await inspectImage(animated, 'image/webp')).toMatchObject({ status: 415, reason: 'animated' });
    const gif = await sharp(frames, { join: { animated: true } }).gif().toBuffer();
    expect(await inspectImage(gif, 'image/gif')).toMatchObject({ status: 415, reason: 'unsupported_format' });
  });

  it('refuses a WebP whose VP8X header sets the animation flag', async () => {
    // VP8X (flags: animation, canvas 64x48), then the static frame: only the flag says "animated".
    const vp8x = Buffer.alloc(18);
    vp8x.write('VP8X', 0, 'latin1');
    vp8x.writeUInt32LE(10, 4);
    vp8x[8] = 0x02;
    vp8x.writeUIntLE(64 - 1, 12, 3);
    vp8x.writeUIntLE(48 - 1, 15, 3);
    const frame = webp.subarray(12); // the plain VP8 chunk of the static fixture
    const body = Buffer.concat([Buffer.from('WEBP', 'latin1'), vp8x, frame]);
    const riff = Buffer.alloc(8);
    riff.write('RIFF', 0, 'latin1');
    riff.writeUInt32LE(body.length, 4);
    expect(await inspectImage(Buffer.concat([riff, body]), null)).toMatchObject({ status: 415, reason: 'animated' });
  });

  it('refuses an APNG, which libvips reads as a single page', async () => {
    const [a, b] = await Promise.all(['#f00', '#00f'].map((c) => solid(32, 32, c).png().toBuffer()));
    const animated = apng(a, b, 32);
    expect((await sharp(animated).metadata()).pages).toBeUndefined(); // why our own acTL check exists
    expect(await inspectImage(animated, 'image/png')).toMatchObject({ status: 415, reason: 'animated' });
  });

  it('refuses 16,000,001 pixels from the header alone (24961x641)', async () => {
    expect(24961 * 641).toBe(MAX_IMAGE_PIXELS + 1);
    // The IDAT is far too short for these dimensions: a decode would fail as invalid_image instead.
    expect(await inspectImage(craftedPng(24961, 641), 'image/png')).toMatchObject({ status: 415, reason: 'too_many_pixels' });
  });

  it('does not decode a decompression bomb (20000x20000 PNG)', async () => {
    const bomb = craftedPng(20000, 20000, deflateSync(Buffer.alloc(8_000_000))); // 8 MB of zero rows, ~8 KB deflated
    const rssBefore = process.memoryUsage().rss;
    const started = performance.now();
    const result = await inspectImage(bomb, 'image/png');
    const elapsed = performance.now() - started;
    expect(result).toMatchObject({ status: 415, reason: 'too_many_pixels' });
    expect(elapsed).toBeLessThan(250);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(50_000_000); // a decode needs 1.2 GB
  });

  it('refuses truncated JPEG, PNG and WebP files as invalid_image', async () => {
    for (const [bytes, type] of [
      [jpeg, 'image/jpeg'],
      [png, 'image/png'],
      [webp, 'image/webp'],
    ] as const) {
      for (const keep of [0.5, 0.9]) {
        const truncated = bytes.subarray(0, Math.floor(bytes.length * keep));
        expect(await inspectImage(truncated, type), `${type} cut to ${keep}`).toMatchObject({ status: 415, reason: 'invalid_image' });
      }
    }
  });

  it('refuses a PNG whose image data fails its CRC, and bytes that only start like a JPEG', async () => {
    const corrupt = Buffer.from(png);
    const idat = corrupt.indexOf('IDAT');
    corrupt[idat + 4 + corrupt.readUInt32BE(idat - 4)] ^= 1; // flip a bit of the IDAT CRC
    expect(await inspectImage(corrupt, 'image/png')).toMatchObject({ status: 415, reason: 'invalid_image' });
    const fake = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), Buffer.alloc(100, 0x41)]);
    expect(await inspectImage(fake, 'image/jpeg')).toMatchObject({ status: 415, reason: 'invalid_image' });
  });
});
