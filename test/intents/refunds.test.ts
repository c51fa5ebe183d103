// Refunds (docs/intents.md#refunds) on the devchain with the real facilitator: paid back to the payer from the
// project's refund wallet, exactly once under retries (Idempotency-Key), races (the database reserves the cents)
// and a process that dies between recording a refund and sending it. Every amount is read from the chain.
import { sql } from 'drizzle-orm';
import { getAddress, parseAbiItem, type Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RefundStore } from '../../src/modules/intents/refund-store.js';
import { noIntentEvents } from '../../src/modules/intents/event-sink.js';
import { isCheckViolation } from '../../src/platform/db-errors.js';
import { newId } from '../../src/platform/ids.js';
import type { TestApp } from '../helpers/test-app.js';
import { createIntent, createShop, type Shop } from './fixtures.js';
import { balanceOf, buildPayApp, eventually, fundedPayer, getIntent, pay, signedHeader } from './harness.js';

let app: TestApp;
let mgmt: string;

beforeAll(async () => {
  app = await buildPayApp({ env: { INTENT_RECONCILE_INTERVAL_MS: '200', INTENT_RECONCILE_GRACE_SECONDS: '1' } });
  mgmt = await app.mgmtSecret('refunds');
}, 120_000);
afterAll(async () => app?.close());

async function call(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, secret?: string, payload?: unknown, headers: Record<string, string> = {}) {
  const response = await app.origins.api!.inject({ method, url, headers: { ...(secret ? { authorization: `Bearer ${secret}` } : {}), ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });
  return { status: response.statusCode, body: response.json(), headers: response.headers };
}

/** A Tollgate wallet holding `usdg`, with its first credential's secret. */
async function refundWallet(usdg = '100') {
  const created = await call('POST', '/v1/wallets', mgmt, { externalId: `refunds-${newId()}`, name: 'refunds' });
  expect(created.status).toBe(201);
  const wallet = created.body.data.wallet as { id: string; address: Address };
  if (usdg !== '0') await app.ctx.chain.devchain!.fund(wallet.address, usdg);
  return { wallet, secret: created.body.data.credential.secret as string, credentialId: created.body.data.credential.id as string };
}

interface RefundShop extends Shop {
  walletAddress: Address;
  walletSecret: string;
  walletId: string;
  credentialId: string;
  queueId: string;
}

/** A shop whose project names a funded refund wallet and an intent-events queue. */
async function refundingShop(usdg = '100'): Promise<RefundShop> {
  const shop = await createShop(app);
  const { wallet, secret, credentialId } = await refundWallet(usdg);
  const queue = await call('POST', '/v1/event-queues', shop.apiKey, { name: 'intent-events' });
  const set = await call('PATCH', `/v1/projects/${shop.projectId}`, shop.identity, { refundWalletId: wallet.id, refundWalletCredential: secret, intentEventsQueueId: queue.body.data.id });
  expect(set.status, JSON.stringify(set.body)).toBe(200);
  expect(set.body.data).toMatchObject({ refundWalletId: wallet.id });
  expect(JSON.stringify(set.body)).not.toContain(secret);
  return { ...shop, walletAddress: wallet.address, walletSecret: secret, walletId: wallet.id, credentialId, queueId: queue.body.data.id };
}

/** An intent of `cents` paid over x402 by a fresh payer. */
async function paidIntent(shop: Shop, cents = 1234) {
  const intent = (await createIntent(app, shop, { amountUsdCents: cents })).json();
  const payer = await fundedPayer(app, '100');
  const paid = await pay(app, intent.id, { 'payment-signature': await signedHeader(app, intent.id, payer) });
  expect(paid.statusCode).toBe(200);
  return { intent, payer };
}

const refund = (shop: Shop, intentId: string, amountUsdCents: number, key: string | null = `refund-${newId()}`, secret = shop.apiKey) =>
  call('POST', `/v1/payment-intents/${intentId}/refunds`, secret, { amountUsdCents }, key ? { 'idempotency-key': key } : {});

const transferEvent = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
const transfersBetween = (from: Address, to: Address) =>
  app.ctx.chain.publicClient.getLogs({ address: app.ctx.chain.asset.address, event: transferEvent, args: { from, to }, fromBlock: 0n });
const eventsIn = (queueId: string) => app.ctx.database.query<{ payload: Record<string, unknown>; deduplication_key: string }>(sql`select payload, deduplication_key from events where queue_id = ${queueId} order by id`);

describe('PATCH /v1/projects/{projectId}: the refund wallet', () => {
  it('takes a wallet only with a live credential of it, from the project owner; null clears it', async () => {
    const shop = await createShop(app);
    const mine = await refundWallet('0');
    const other = await refundWallet('0');
    const patch = (body: unknown, token = shop.identity) => call('PATCH', `/v1/projects/${shop.projectId}`, token, body);
    // Another wallet's credential, a made-up one, none at all.
    expect((await patch({ refundWalletId: mine.wallet.id, refundWalletCredential: other.secret })).body).toMatchObject({ data: { reason: 'refund_wallet_not_found' } });
    expect((await patch({ refundWalletId: mine.wallet.id, refundWalletCredential: 'svc_wallet_nope' })).status).toBe(404);
    expect((await patch({ refundWalletId: mine.wallet.id })).status).toBe(400);
    // Another user cannot set it on this project, nor with a project API key.
    const stranger = await createShop(app);
    expect((await patch({ refundWalletId: mine.wallet.id, refundWalletCredential: mine.secret }, stranger.identity)).status).toBe(404);
    expect((await patch({ refundWalletId: mine.wallet.id, refundWalletCredential: mine.secret }, shop.apiKey)).status).toBe(401);
    const set = await patch({ refundWalletId: mine.wallet.id, refundWalletCredential: mine.secret });
    expect(set.status).toBe(200);
    expect(set.body.data.refundWalletId).toBe(mine.wallet.id);
    expect((await call('GET', '/v1/projects', shop.identity)).body.data.find((p: { id: string }) => p.id === shop.projectId).refundWalletId).toBe(mine.wallet.id);
    expect((await patch({ refundWalletId: null })).body.data.refundWalletId).toBeNull();
  });
});

describe('POST /v1/payment-intents/{id}/refunds', () => {
  it('pays the payer back from the refund wallet, shows it on the intent and in GET …/refunds, and publishes payment_intent.refunded', async () => {
    const shop = await refundingShop();
    const { intent, payer } = await paidIntent(shop);
    const before = await balanceOf(app, payer.address);
    const created = await call('POST', `/v1/payment-intents/${intent.id}/refunds`, shop.apiKey, { amountUsdCents: 500 }, { 'idempotency-key': `refund-${newId()}`, 'x-request-id': 'refund-request-1' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // The wallet payment names the request that asked for it.
    expect(await app.ctx.services.wallets.payment(shop.walletId, created.body.id)).toMatchObject({ requestId: 'refund-request-1' });
    expect(created.body).toMatchObject({ intentId: intent.id, amountUsdCents: 500, status: 'succeeded', transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), recipient: payer.address });
    expect(await balanceOf(app, payer.address)).toBe(before + 5_000_000n);
    const moved = await transfersBetween(shop.walletAddress, payer.address);
    expect(moved.map((log) => [log.transactionHash, log.args.value])).toEqual([[created.body.transaction, 5_000_000n]]);
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'settled', receivedUsdCents: 1234, refundedUsdCents: 500 });
    const listed = await call('GET', `/v1/payment-intents/${intent.id}/refunds`, shop.apiKey);
    expect(listed.body).toEqual([created.body]);
    const events = await eventsIn(shop.queueId);
    const refunded = events.filter((event) => event.payload.type === 'payment_intent.refunded');
    expect(refunded.map((event) => event.deduplication_key)).toEqual([`payment_intent:${intent.id}:refund:${created.body.id}`]);
    expect(refunded[0]!.payload).toMatchObject({ intentId: intent.id, status: 'settled', refund: { id: created.body.id, amountUsdCents: 500, transaction: created.body.transaction }, refundedUsdCents: 500 });
  }, 60_000);

  it('needs an Idempotency-Key; a repeat answers the same refund and pays nothing more; another body under the key conflicts', async () => {
    const shop = await refundingShop();
    const { intent, payer } = await paidIntent(shop);
    expect((await refund(shop, intent.id, 100, null)).body).toMatchObject({ code: 'idempotency_key_required' });
    const first = await refund(shop, intent.id, 100, 'refund-key-1');
    const again = await refund(shop, intent.id, 100, 'refund-key-1');
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await refund(shop, intent.id, 200, 'refund-key-1')).body).toMatchObject({ code: 'idempotency_conflict' });
    expect(await transfersBetween(shop.walletAddress, payer.address)).toHaveLength(1);
    expect((await getIntent(app, shop.apiKey, intent.id)).refundedUsdCents).toBe(100);
  }, 60_000);

  it('refuses more than is left to refund, and an intent nothing was received for', async () => {
    const shop = await refundingShop();
    const { intent } = await paidIntent(shop, 1000);
    expect((await refund(shop, intent.id, 1001)).body).toMatchObject({ code: 'refund_exceeds_refundable', details: { refundableUsdCents: 1000, requestedUsdCents: 1001 } });
    expect((await refund(shop, intent.id, 600)).status).toBe(201);
    expect((await refund(shop, intent.id, 401)).body).toMatchObject({ code: 'refund_exceeds_refundable', details: { refundableUsdCents: 400 } });
    expect((await refund(shop, intent.id, 400)).body).toMatchObject({ status: 'succeeded' });
    expect((await refund(shop, intent.id, 1)).status).toBe(409);
    const unpaid = (await createIntent(app, shop)).json();
    expect((await refund(shop, unpaid.id, 100)).body).toMatchObject({ code: 'refund_exceeds_refundable', details: { refundableUsdCents: 0 } });
  }, 60_000);

  it('two refunds racing for the last cents: one succeeds, the other is refused, one transfer moved', async () => {
    const shop = await refundingShop();
    const { intent, payer } = await paidIntent(shop, 1000);
    expect((await refund(shop, intent.id, 300)).status).toBe(201);
    const answers = await Promise.all([refund(shop, intent.id, 700), refund(shop, intent.id, 700)]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409]);
    expect(answers.find((answer) => answer.status === 201)!.body.status).toBe('succeeded');
    expect((await transfersBetween(shop.walletAddress, payer.address)).map((log) => log.args.value).sort()).toEqual([3_000_000n, 7_000_000n]);
    expect((await getIntent(app, shop.apiKey, intent.id)).refundedUsdCents).toBe(1000);
  }, 60_000);

  it('the database reserves the cents: of 20 reservations of 10 cents racing for 100, exactly 10 win', async () => {
    const shop = await refundingShop('0');
    const { intent } = await paidIntent(shop, 100);
    const store = new RefundStore(app.ctx.db, noIntentEvents);
    const row = () => ({ id: newId(), intentId: intent.id, projectId: shop.projectId, amountUsdCents: 10, recipient: shop.payTo, walletId: shop.walletId, walletCredentialId: shop.credentialId, createdAt: new Date() });
    const won = await Promise.all(Array.from({ length: 20 }, () => store.reserve(row())));
    expect(won.filter((r) => r !== null)).toHaveLength(10);
    expect((await getIntent(app, shop.apiKey, intent.id)).refundedUsdCents).toBe(100);
    // And the table's CHECK holds even against a write that skips the conditional UPDATE.
    const refused = await app.ctx.database.query(sql`update payment_intents set refunded_usd_cents = 101 where id = ${intent.id}`).then(() => null, (error: unknown) => error);
    expect(isCheckViolation(refused, 'payment_intents_refunded_check')).toBe(true);
  }, 60_000);

  it('a refund the wallet cannot pay fails, moves nothing and gives its cents back; without a refund wallet, 409', async () => {
    const shop = await refundingShop('0');
    const { intent, payer } = await paidIntent(shop, 500);
    const failed = await refund(shop, intent.id, 500);
    expect(failed.status).toBe(201);
    expect(failed.body).toMatchObject({ status: 'failed', transaction: null, failureCode: 'refund_transfer_failed' });
    expect(await transfersBetween(shop.walletAddress, payer.address)).toHaveLength(0);
    expect((await getIntent(app, shop.apiKey, intent.id)).refundedUsdCents).toBe(0);
    await app.ctx.chain.devchain!.fund(shop.walletAddress, '10');
    expect((await refund(shop, intent.id, 500)).body).toMatchObject({ status: 'succeeded' });

    const bare = await createShop(app);
    const unrefundable = await paidIntent(bare, 200);
    expect((await refund(bare, unrefundable.intent.id, 100)).body).toMatchObject({ code: 'refund_wallet_not_configured' });
    // A revoked credential stops the refunds it named.
    const revoked = await refundingShop();
    const { intent: revokedIntent } = await paidIntent(revoked, 200);
    expect((await call('DELETE', `/v1/wallets/${revoked.walletId}/credentials/${revoked.credentialId}`, mgmt)).status).toBe(200);
    expect((await refund(revoked, revokedIntent.id, 100)).body).toMatchObject({ code: 'refund_wallet_unavailable' });
  }, 60_000);

  it("another project's key or another user's token cannot see or refund the intent", async () => {
    const shop = await refundingShop();
    const { intent } = await paidIntent(shop, 300);
    const stranger = await refundingShop();
    expect((await refund(stranger, intent.id, 100)).body).toMatchObject({ code: 'intent_not_found' });
    expect((await call('GET', `/v1/payment-intents/${intent.id}/refunds`, stranger.apiKey)).status).toBe(404);
    const owner = `/v1/projects/${shop.projectId}/payment-intents/${intent.id}/refunds`;
    expect((await call('POST', owner, stranger.identity, { amountUsdCents: 100 }, { 'idempotency-key': 'owner-refund-1' })).status).toBe(404);
    expect((await call('POST', owner, shop.apiKey, { amountUsdCents: 100 }, { 'idempotency-key': 'owner-refund-2' })).status).toBe(401);
    expect((await call('GET', owner, stranger.identity)).status).toBe(404);
    // The project's owner, from the dashboard: the same refund, in the envelope.
    const byOwner = await call('POST', owner, shop.identity, { amountUsdCents: 100 }, { 'idempotency-key': 'owner-refund-3' });
    expect(byOwner.status).toBe(201);
    expect(byOwner.body.data).toMatchObject({ status: 'succeeded', amountUsdCents: 100 });
    expect((await call('GET', owner, shop.identity)).body.data.map((r: { id: string }) => r.id)).toEqual([byOwner.body.data.id]);
    expect((await call('POST', owner, shop.identity, { amountUsdCents: 1000 }, { 'idempotency-key': 'owner-refund-4' })).body).toMatchObject({ data: { reason: 'refund_exceeds_refundable' } });
  }, 60_000);

  it('a refund recorded by a process that died before sending it is sent by the reconciler, once', async () => {
    const shop = await refundingShop();
    const { intent, payer } = await paidIntent(shop, 800);
    // What refund.after-record leaves: the refund recorded, its cents reserved, no wallet payment.
    const store = new RefundStore(app.ctx.db, noIntentEvents);
    const recorded = await store.reserve({ id: newId(), intentId: intent.id, projectId: shop.projectId, amountUsdCents: 800, recipient: payer.address, walletId: shop.walletId, walletCredentialId: shop.credentialId, createdAt: new Date() });
    expect(recorded).not.toBeNull();
    const done = await eventually(async () => {
      const listed = (await call('GET', `/v1/payment-intents/${intent.id}/refunds`, shop.apiKey)).body as Array<{ id: string; status: string }>;
      return listed.find((r) => r.id === recorded!.id && r.status === 'succeeded');
    }, 20_000);
    expect(done).toBeTruthy();
    const moved = await transfersBetween(shop.walletAddress, payer.address);
    expect(moved.map((log) => log.args.value)).toEqual([8_000_000n]);
    expect(getAddress(moved[0]!.args.to!)).toBe(payer.address);
  }, 60_000);
});
