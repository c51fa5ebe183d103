import type { LightMyRequestResponse } from 'fastify';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import type { TestApp } from '../helpers/test-app.js';

export interface Shop {
  userId: string;
  identity: string;
  projectId: string;
  apiKey: string;
  merchantId: string;
  payTo: `0x${string}`;
}

/** A user with a project (and its first key) and one merchant paying to a fresh address. */
export async function createShop(app: TestApp, userId = `user-${Math.random().toString(36).slice(2)}`): Promise<Shop> {
  const api = app.origins.api!;
  const identity = await app.identityToken(userId);
  const project = await api.inject({ method: 'POST', url: '/v1/projects', headers: { authorization: `Bearer ${identity}` }, payload: { name: 'shop' } });
  if (project.statusCode !== 201) throw new Error(`project create: ${project.statusCode} ${project.body}`);
  const { project: created, apiKey } = project.json().data;
  const payTo = privateKeyToAccount(generatePrivateKey()).address;
  const merchant = await api.inject({
    method: 'POST',
    url: `/v1/projects/${created.id}/merchants`,
    headers: { authorization: `Bearer ${identity}` },
    payload: { name: 'store', payTo },
  });
  if (merchant.statusCode !== 201) throw new Error(`merchant create: ${merchant.statusCode} ${merchant.body}`);
  return { userId, identity, projectId: created.id, apiKey: apiKey.secret, merchantId: merchant.json().data.id, payTo };
}

let counter = 0;
export const uniqueExternalId = () => `order-${Date.now()}-${++counter}`;

export async function createIntent(app: TestApp, shop: Shop, body: Record<string, unknown> = {}): Promise<LightMyRequestResponse> {
  return app.origins.api!.inject({
    method: 'POST',
    url: '/v1/payment-intents',
    headers: { authorization: `Bearer ${shop.apiKey}` },
    payload: { merchantId: shop.merchantId, amountUsdCents: 1234, externalId: uniqueExternalId(), ...body },
  });
}

/** The spec's Payment Intent fields, and our extensions: all always present. */
export const INTENT_FIELDS = [
  'id', 'merchantId', 'externalId', 'customerRef', 'description', 'metadata', 'status', 'amountUsdCents', 'currency',
  'paymentUrl', 'network', 'asset', 'payTo', 'transactionHash', 'createdAt', 'settledAt', 'expiresAt', 'failureCode', 'failureMessage',
  // Extensions (docs/intents.md): the checkout's link back to the merchant; the last attempt that did not pay it.
  'returnUrl', 'lastPaymentError',
  // How it was paid, what was received and refunded (issue 45).
  'paidVia', 'receivedUsdCents', 'refundedUsdCents', 'payer',
].sort();
