// Bad uploads get the spec's 4xx in the envelope shape, create no order and charge nothing: images
// judged by content (animations, pixel bombs, mislabelled types, non-images) and multipart bodies that
// break the one-file rule or the byte limits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { count } from 'drizzle-orm';
import { uploadOrders } from '../../src/modules/storage/tables.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { animated, apng, craftedPng, solid } from './fixtures.js';
import { jpegOf, newKey, upload, uploadForm } from './helpers.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => app?.close());

const orders = async () => (await app.ctx.db.select({ n: count() }).from(uploadOrders))[0]!.n;

async function expectRefused(res: Response, status: number, reason: string) {
  const body = (await res.json()) as { code: number; message: string; data: { reason: string } };
  expect([res.status, body.data?.reason], body.message).toEqual([status, reason]);
  expect(body.code).toBeGreaterThan(0);
}

describe('images are judged by their content', () => {
  it('animated WebP, APNG, GIF, 16,000,001 pixels, a JPEG declared as PNG, a text file → 415; nothing created', async () => {
    const before = await orders();
    const frame = await solid(16, 16).png().toBuffer();
    const cases: Array<[string, Buffer, string, string]> = [
      ['animated webp', await animated('webp'), 'image/webp', 'animated'],
      ['apng', apng(frame, await solid(16, 16, '#f00').png().toBuffer(), 16), 'image/png', 'animated'],
      ['gif', await animated('gif'), 'image/gif', 'unsupported_format'],
      ['16,000,001 pixels', craftedPng(24961, 641), 'image/png', 'too_many_pixels'],
      ['jpeg declared as png', await jpegOf(5), 'image/png', 'type_mismatch'],
      ['text', Buffer.from('just some text, not an image\n'), 'text/plain', 'unsupported_format'],
    ];
    for (const [label, bytes, type, reason] of cases) {
      const res = await upload(app, newKey(), uploadForm(bytes, type, 'upload.bin'));
      await expectRefused(res, 415, reason).catch((error: Error) => {
        throw new Error(`${label}: ${error.message}`);
      });
    }
    expect(await orders()).toBe(before);
  });

  it('an empty file → 400', async () => {
    await expectRefused(await upload(app, newKey(), uploadForm(Buffer.alloc(0))), 400, 'invalid_file_field');
  });
});

describe('the multipart body', () => {
  it('a 5,000,001-byte file → 413; a whole request over 5,100,000 bytes → 413 before it is read', async () => {
    const big = Buffer.alloc(5_000_001, 0xff);
    big.set([0xff, 0xd8, 0xff]);
    await expectRefused(await upload(app, newKey(), uploadForm(big)), 413, 'payload_too_large');
    const form = uploadForm(await jpegOf(5));
    form.append('padding', 'x'.repeat(5_100_001));
    await expectRefused(await upload(app, newKey(), form), 413, 'payload_too_large');
  });

  it('a second file, another field, another field name, or no multipart at all → 400', async () => {
    const image = await jpegOf(5);
    const two = uploadForm(image);
    two.append('file', new Blob([image], { type: 'image/jpeg' }), 'b.jpg');
    await expectRefused(await upload(app, newKey(), two), 400, 'invalid_file_field');
    const field = new FormData();
    field.append('note', 'hello');
    field.append('file', new Blob([image], { type: 'image/jpeg' }), 'a.jpg');
    await expectRefused(await upload(app, newKey(), field), 400, 'invalid_file_field');
    const misnamed = new FormData();
    misnamed.append('image', new Blob([image], { type: 'image/jpeg' }), 'a.jpg');
    await expectRefused(await upload(app, newKey(), misnamed), 400, 'invalid_file_field');
    await expectRefused(await upload(app, newKey(), new FormData()), 400, 'invalid_file_field');
    const json = await fetch(`${app.urls.api}/v1/ipfs/upload`, { method: 'POST', headers: { 'idempotency-key': newKey(), 'content-type': 'application/json' }, body: '{}' });
    await expectRefused(json, 400, 'invalid_file_field');
  });
});
