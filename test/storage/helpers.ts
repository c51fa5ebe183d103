import { createHash, randomUUID } from 'node:crypto';
import { x402Client, x402HTTPClient } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { CID } from 'multiformats/cid';
import * as Digest from 'multiformats/hashes/digest';
import sharp from 'sharp';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { TestApp } from '../helpers/test-app.js';

export const USDG = '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168';
export const NETWORK = 'eip155:4663';
export const PRICE = 5000n;

/** A payer as the official client builds one, allowed to spend the storage price in USDG. */
export function storagePayer() {
  const account = privateKeyToAccount(generatePrivateKey());
  const client = x402Client.fromConfig({
    schemes: [{ network: NETWORK, client: new ExactEvmScheme(account) }],
    spendControls: { allowedAssets: [{ network: NETWORK, asset: USDG, maxAmountPerPayment: '5000' }] },
  });
  return { account, http: new x402HTTPClient(client) };
}

let seed = 0;
/** A distinct photo-like JPEG (noise, so it does not compress away) of about `kb` KB. */
export async function jpegOf(kb = 100): Promise<Buffer> {
  seed += 1;
  const side = Math.round(Math.sqrt(kb * 1024 * 0.9));
  const pixels = Buffer.alloc(side * side * 3);
  let x = seed * 2654435761;
  for (let i = 0; i < pixels.length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    pixels[i] = x >>> 24;
  }
  return sharp(pixels, { raw: { width: side, height: side, channels: 3 } }).jpeg({ quality: 80 }).toBuffer();
}

export const pngOf = (width = 8, height = 8) =>
  sharp({ create: { width, height, channels: 3, background: { r: seed++ % 256, g: 10, b: 20 } } }).png().toBuffer();

/** The CID a raw single-block file must have, computed without the importer: CIDv1(raw, sha2-256). */
export function rawCidOf(bytes: Uint8Array): string {
  const digest = Digest.create(0x12, createHash('sha256').update(bytes).digest());
  return CID.create(1, 0x55, digest).toString();
}

export function uploadForm(bytes: Buffer, type = 'image/jpeg', name = 'image.jpg'): FormData {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type }), name);
  return form;
}

export const newKey = () => randomUUID();

/** POST /v1/ipfs/upload over real HTTP. */
export function upload(app: TestApp, key: string | null, form: FormData, init: { orderId?: string; headers?: Record<string, string> } = {}) {
  const query = init.orderId ? `?orderId=${init.orderId}` : '';
  return fetch(`${app.urls.api}/v1/ipfs/upload${query}`, {
    method: 'POST',
    headers: { ...(key ? { 'idempotency-key': key } : {}), ...init.headers },
    body: form,
  });
}

export interface OrderBody {
  id: string;
  status: string;
  amountAtomic: string;
  transactionHash: string | null;
  quoteExpiresAt: string;
  expiresAt: string | null;
  paymentUrl: string;
  cid: string | null;
  ipfsUri: string | null;
  url: string | null;
  retentionDays: number;
}

export async function readOrder(app: TestApp, id: string, key: string) {
  const res = await fetch(`${app.urls.api}/v1/ipfs/orders/${id}`, { headers: { 'idempotency-key': key } });
  return { status: res.status, body: (await res.json()) as { code: number; message: string; data: OrderBody } };
}

/** The 402 of a first upload, decoded by the official client; and the payment it signs for it. */
export async function challengeAndSign(app: TestApp, key: string, form: FormData, payer = storagePayer()) {
  const first = await upload(app, key, form);
  if (first.status !== 402) throw new Error(`expected 402, got ${first.status}: ${await first.text()}`);
  const required = payer.http.getPaymentRequiredResponse((name) => first.headers.get(name), await first.json());
  const payload = await payer.http.createPaymentPayload(required);
  return { payer, required, payload, headers: payer.http.encodePaymentSignatureHeader(payload) as Record<string, string> };
}
