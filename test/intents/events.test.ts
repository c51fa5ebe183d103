// Payment-intent events (docs/intents.md#intent-events) on the devchain with the real facilitator: a project
// names one of its event queues (PATCH /v1/projects/{projectId}), and every move of its intents to settled,
// failed or expired publishes exactly one event there, in the transaction of the move. Counted from the
// events table and, for payments, against what moved on chain.
import { sql } from 'drizzle-orm';
import { createWalletClient, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usdgAbi } from '../../src/chain/usdg-artifact.js';
import type { AppContext } from '../../src/context.js';
import { intentEventSinkOf } from '../../src/modules/intents/events.js';
import type { PaymentRail } from '../../src/modules/intents/payments.js';
import { paymentIntents, type IntentRow } from '../../src/modules/intents/tables.js';
import { ManualClock } from '../../src/platform/clock.js';
import { signPayment } from '../../src/x402/client.js';
import type { TestApp } from '../helpers/test-app.js';
import { Faults } from './faults.js';
import { createIntent, createShop, type Shop } from './fixtures.js';
import { balanceOf, buildPayApp, challengeOf, eventually, fundedPayer, getIntent, pay, reconcile, signedHeader, transfersTo } from './harness.js';

const LIFETIME = 3600;
const clock = new ManualClock();
const faults = new Faults();
/** Runs after the real verify of the next pay (a merchant disabled while the payment is being verified). */
let afterVerify: (() => Promise<void>) | null = null;
let app: TestApp;

beforeAll(async () => {
  const options = faults.options();
  app = await buildPayApp({
    ...options,
    rail: (ctx: AppContext): PaymentRail => {
      const rail = options.rail!(ctx);
      return {
        ...rail,
        verify: async (payload, requirements) => {
          const verified = await rail.verify(payload, requirements);
          const hook = afterVerify;
          afterVerify = null;
          if (hook) await hook();
          return verified;
        },
      };
    },
    clock,
    env: {
      INTENT_LIFETIME_SECONDS: String(LIFETIME),
      // 100 payments from one test client: the public pay limits are not what this file measures.
      INTENT_PAY_LIMIT_PER_CLIENT: '100000',
      INTENT_RECONCILE_INTERVAL_MS: '100',
      INTENT_RECONCILE_GRACE_SECONDS: '30',
    },
  });
}, 120_000);
afterAll(async () => app?.close());

async function call(app: TestApp, method: 'GET' | 'POST' | 'PATCH', url: string, secret?: string, payload?: unknown) {
  const response = await app.origins.api!.inject({ method, url, headers: secret ? { authorization: `Bearer ${secret}` } : {}, ...(payload === undefined ? {} : { payload: payload as object }) });
  return { status: response.statusCode, body: response.json() };
}

interface StoredEvent {
  id: string;
  payload: Record<string, unknown>;
  deduplication_key: string;
}

const eventsIn = (queueId: string) =>
  app.ctx.database.query<StoredEvent>(sql`select id, payload, deduplication_key from events where queue_id = ${queueId} order by id`);
const eventsOfProject = (projectId: string) => app.ctx.database.query<StoredEvent>(sql`select id, payload, deduplication_key from events where project_id = ${projectId}`);

async function queueOf(shop: Shop, name = 'intent-events'): Promise<string> {
  const created = await call(app, 'POST', '/v1/event-queues', shop.apiKey, { name });
  expect(created.status).toBe(201);
  return created.body.data.id;
}
const patchProject = (shop: Pick<Shop, 'projectId'>, token: string, body: unknown) => call(app, 'PATCH', `/v1/projects/${shop.projectId}`, token, body);

/** A shop whose project sends its intent events to a new queue. */
async function shopWithQueue(): Promise<Shop & { queueId: string }> {
  const shop = await createShop(app);
  const queueId = await queueOf(shop);
  const set = await patchProject(shop, shop.identity, { intentEventsQueueId: queueId });
  expect(set.status).toBe(200);
  return { ...shop, queueId };
}

const payHttp = async (intentId: string, header: string) => {
  const response = await fetch(`${app.urls.api}/v1/payment-intents/${intentId}/pay`, { method: 'POST', headers: { 'PAYMENT-SIGNATURE': header } });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe('PATCH /v1/projects/{projectId}: the intent-events queue', () => {
  it("names one of the project's queues (owner only), shows it in the Project, and clears it with null", async () => {
    const alice = await createShop(app, 'events-alice');
    const bob = await createShop(app, 'events-bob');
    const queueId = await queueOf(alice);
    const bobsQueue = await queueOf(bob);

    const set = await patchProject(alice, alice.identity, { intentEventsQueueId: queueId });
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({ id: alice.projectId, intentEventsQueueId: queueId, merchants: [expect.objectContaining({ id: alice.merchantId })], apiKeys: [expect.any(Object)] });
    const listed = (await call(app, 'GET', '/v1/projects', alice.identity)).body.data.find((p: { id: string }) => p.id === alice.projectId);
    expect(listed).toEqual(set.body.data);
    // Omitted: unchanged.
    expect((await patchProject(alice, alice.identity, {})).body.data.intentEventsQueueId).toBe(queueId);

    // Another project's queue does not exist for this one; another user's project does not exist for Alice.
    const foreignQueue = await patchProject(alice, alice.identity, { intentEventsQueueId: bobsQueue });
    expect(foreignQueue.status).toBe(404);
    expect(foreignQueue.body).toMatchObject({ code: 1004, data: { reason: 'queue_not_found' } });
    expect((await patchProject(alice, alice.identity, { intentEventsQueueId: '01900000-0000-7000-8000-000000000000' })).status).toBe(404);
    const foreignProject = await patchProject(bob, alice.identity, { intentEventsQueueId: queueId });
    expect(foreignProject.status).toBe(404);
    expect((await patchProject(alice, bob.identity, { intentEventsQueueId: bobsQueue })).status).toBe(404);
    expect((await patchProject(alice, alice.apiKey, { intentEventsQueueId: null })).status).toBe(401);
    for (const bad of [{ intentEventsQueueId: 'not-a-uuid' }, { intentEventsQueueId: 7 }]) expect((await patchProject(alice, alice.identity, bad)).status).toBe(400);
    expect((await call(app, 'GET', '/v1/projects', bob.identity)).body.data.find((p: { id: string }) => p.id === bob.projectId).intentEventsQueueId).toBeNull();
    expect((await call(app, 'GET', '/v1/projects', alice.identity)).body.data.find((p: { id: string }) => p.id === alice.projectId).intentEventsQueueId).toBe(queueId);

    const cleared = await patchProject(alice, alice.identity, { intentEventsQueueId: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data.intentEventsQueueId).toBeNull();
  });
});

describe('payment_intent.settled', () => {
  it('100 intents paid concurrently: exactly 100 settled events, one per intent, none twice; reconcile, retries and expiry sweeps add none', async () => {
    const shop = await shopWithQueue();
    const payer = await fundedPayer(app, '200');
    const intents: Array<{ id: string; externalId: string }> = [];
    for (let i = 0; i < 100; i++) intents.push((await createIntent(app, shop, { amountUsdCents: 100 })).json());
    const headers = await Promise.all(intents.map(async (intent) => (await signPayment(payer, await challengeOf(app, intent.id))).header));
    const payerBefore = await balanceOf(app, payer.address);

    const answers = await Promise.all(intents.map((intent, i) => payHttp(intent.id, headers[i]!)));
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);

    // On chain: 100 transfers of $1 to the merchant, the payer charged $100.
    const transfers = await transfersTo(app, shop.payTo);
    expect(transfers).toHaveLength(100);
    expect(await balanceOf(app, payer.address)).toBe(payerBefore - 100_000_000n);
    const events = await eventsIn(shop.queueId);
    expect(events).toHaveLength(100);
    expect(new Set(events.map((event) => event.payload.intentId))).toEqual(new Set(intents.map((intent) => intent.id)));
    expect(new Set(events.map((event) => (event.payload.settlement as { transaction: string }).transaction))).toEqual(new Set(transfers.map((t) => t.transactionHash)));
    const byIntent = new Map(intents.map((intent) => [intent.id, intent]));
    for (const event of events) {
      const intent = byIntent.get(event.payload.intentId as string)!;
      expect(event.deduplication_key).toBe(`payment_intent:${intent.id}:settled`);
      expect(event.payload).toEqual({
        type: 'payment_intent.settled',
        intentId: intent.id,
        merchantId: shop.merchantId,
        externalId: intent.externalId,
        status: 'settled',
        amountUsdCents: 100,
        metadata: null,
        failureCode: null,
        paidVia: 'x402',
        settlement: { transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: 'eip155:4663', payer: payer.address, settledAt: expect.any(String) },
      });
    }

    // Everything that could move them again: reconcile, the payer's retries, the worker's sweeps, and a
    // repeated publication of the settled rows themselves (what a retried transaction would do).
    await Promise.all(intents.slice(0, 20).map((intent) => reconcile(app, shop.apiKey, intent.id)));
    expect((await Promise.all(intents.slice(0, 20).map((intent, i) => payHttp(intent.id, headers[i]!)))).map((a) => a.status)).toEqual(Array(20).fill(200));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const rows = (await app.ctx.db.select().from(paymentIntents).where(sql`${paymentIntents.projectId} = ${shop.projectId}`)) as IntentRow[];
    expect(rows).toHaveLength(100);
    const sink = intentEventSinkOf(app.ctx);
    expect(await app.ctx.db.transaction((tx) => sink.publish(tx, rows))).toEqual([]);
    expect(await eventsIn(shop.queueId)).toHaveLength(100);
  }, 180_000);

  it('a settlement decided by reconciliation publishes once, however many reconcile it at the same time', async () => {
    const shop = await shopWithQueue();
    const payer = await fundedPayer(app, '20');
    const intent = (await createIntent(app, shop, { amountUsdCents: 300 })).json();
    const header = await signedHeader(app, intent.id, payer);
    faults.crashAfterBroadcast();
    expect((await pay(app, intent.id, { 'payment-signature': header })).json()).toMatchObject({ code: 'settlement_result_unknown' });
    // Settling is not an event.
    expect(await eventsIn(shop.queueId)).toHaveLength(0);

    const answers = await Promise.all(Array.from({ length: 8 }, () => reconcile(app, shop.apiKey, intent.id)));
    expect(answers.map((answer) => answer.json().status)).toEqual(Array(8).fill('settled'));
    const [transfer] = await transfersTo(app, shop.payTo);
    const events = await eventsIn(shop.queueId);
    expect(events).toHaveLength(1);
    expect(events[0]!.payload).toMatchObject({ type: 'payment_intent.settled', intentId: intent.id, status: 'settled', settlement: { transaction: transfer!.transactionHash } });
    expect((await pay(app, intent.id, { 'payment-signature': header })).statusCode).toBe(200);
    expect(await eventsIn(shop.queueId)).toHaveLength(1);
  }, 60_000);
});

describe('payment_intent.failed', () => {
  it('a settle refused before any transfer publishes nothing: the intent stays payable', async () => {
    const shop = await shopWithQueue();
    const payer = await fundedPayer(app, '10');
    const intent = (await createIntent(app, shop, { amountUsdCents: 500 })).json();
    const header = await signedHeader(app, intent.id, payer);
    // Between verify and settle the payer moves its money away: the transfer cannot happen.
    faults.onNextSettle(async (real) => {
      const wallet = createWalletClient({ account: payer, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
      const hash = await wallet.writeContract({
        address: app.ctx.chain.asset.address,
        abi: usdgAbi,
        functionName: 'transfer',
        args: [privateKeyToAccount(generatePrivateKey()).address, await balanceOf(app, payer.address)],
      });
      await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash });
      return real();
    });
    expect((await pay(app, intent.id, { 'payment-signature': header })).statusCode).toBe(402);
    expect(await reconcile(app, shop.apiKey, intent.id).then((r) => r.json().status)).toBe('pending');
    expect(await eventsIn(shop.queueId)).toEqual([]);
    expect(await transfersTo(app, shop.payTo)).toHaveLength(0);
  }, 60_000);

  it('a failure decided from the chain (the payment bought something else) publishes one failed event without a settlement', async () => {
    const shop = await shopWithQueue();
    const payer = await fundedPayer(app, '10');
    const intent = (await createIntent(app, shop, { amountUsdCents: 500, metadata: { order: 'F-1', note: null } })).json();
    const challenge = await challengeOf(app, intent.id);
    const { header, payload } = await signPayment(payer, challenge);
    // The intent's settle is lost (its outcome unknown), and a copy of the payment is settled elsewhere first.
    faults.onNextSettle(async () => ({ kind: 'unknown', transaction: null, message: 'lost (injected)' }));
    expect((await pay(app, intent.id, { 'payment-signature': header })).json()).toMatchObject({ code: 'settlement_result_unknown' });
    expect(await app.ctx.facilitator!.settle(payload, challenge.accepts[0]!)).toMatchObject({ success: true });
    const reconciled = await eventually(async () => {
      const body = (await reconcile(app, shop.apiKey, intent.id)).json();
      return body.status !== 'settling' ? body : null;
    });
    expect(reconciled).toMatchObject({ status: 'failed', failureCode: 'payment_already_used' });
    expect((await pay(app, intent.id)).statusCode).toBe(409);
    expect(await reconcile(app, shop.apiKey, intent.id).then((r) => r.json().status)).toBe('failed');
    const events = await eventsIn(shop.queueId);
    expect(events.map((event) => event.payload)).toEqual([
      // The merchant's metadata and the failure's code ride along (issue 45 item 5).
      { type: 'payment_intent.failed', intentId: intent.id, merchantId: shop.merchantId, externalId: intent.externalId, status: 'failed', amountUsdCents: 500, metadata: { order: 'F-1', note: null }, failureCode: 'payment_already_used', paidVia: null, settlement: null },
    ]);
    expect(events[0]!.deduplication_key).toBe(`payment_intent:${intent.id}:failed`);
    expect(await transfersTo(app, shop.payTo)).toHaveLength(1);
  }, 60_000);
});

describe('where nothing is published', () => {
  it('publishes nothing for a project without a queue, nor after the queue is cleared', async () => {
    const bare = await createShop(app);
    const payer = await fundedPayer(app, '20');
    const paid = (await createIntent(app, bare, { amountUsdCents: 100 })).json();
    expect((await pay(app, paid.id, { 'payment-signature': await signedHeader(app, paid.id, payer) })).statusCode).toBe(200);
    expect(await eventsOfProject(bare.projectId)).toEqual([]);

    const cleared = await shopWithQueue();
    expect((await patchProject(cleared, cleared.identity, { intentEventsQueueId: null })).status).toBe(200);
    const later = (await createIntent(app, cleared, { amountUsdCents: 100 })).json();
    expect((await pay(app, later.id, { 'payment-signature': await signedHeader(app, later.id, payer) })).statusCode).toBe(200);
    expect(await eventsOfProject(cleared.projectId)).toEqual([]);
  }, 60_000);

  it('a merchant disabled while the payment is being verified: the claim refuses it, 403, nothing moves or is published', async () => {
    const shop = await shopWithQueue();
    const payer = await fundedPayer(app, '20');
    const intent = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const header = await signedHeader(app, intent.id, payer);
    const merchantUrl = `/v1/projects/${shop.projectId}/merchants/${shop.merchantId}`;
    afterVerify = async () => {
      expect((await call(app, 'PATCH', merchantUrl, shop.identity, { enabled: false })).status).toBe(200);
    };
    const refused = await pay(app, intent.id, { 'payment-signature': header });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'merchant_disabled' });
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'pending', transactionHash: null });
    expect(await transfersTo(app, shop.payTo)).toHaveLength(0);
    expect(await eventsIn(shop.queueId)).toEqual([]);

    expect((await call(app, 'PATCH', merchantUrl, shop.identity, { enabled: true })).status).toBe(200);
    expect((await pay(app, intent.id, { 'payment-signature': header })).statusCode).toBe(200);
    expect(await eventsIn(shop.queueId)).toHaveLength(1);
  }, 60_000);
});

describe('consuming with the claim/ack API', () => {
  it('claims the events with the project key and acks them', async () => {
    const shop = await shopWithQueue();
    const payer = await fundedPayer(app, '20');
    const intent = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    expect((await pay(app, intent.id, { 'payment-signature': await signedHeader(app, intent.id, payer) })).statusCode).toBe(200);
    const claimed = await call(app, 'POST', `/v1/event-queues/${shop.queueId}/claim`, shop.apiKey, { maxEvents: 10, waitSeconds: 1 });
    expect(claimed.status).toBe(200);
    expect(claimed.body.data).toHaveLength(1);
    const [{ event, leaseToken }] = claimed.body.data;
    expect(event.payload).toMatchObject({ type: 'payment_intent.settled', intentId: intent.id, externalId: intent.externalId });
    expect((await call(app, 'POST', `/v1/events/${event.id}/ack`, shop.apiKey, { leaseToken })).status).toBe(200);
    expect((await call(app, 'POST', `/v1/event-queues/${shop.queueId}/claim`, shop.apiKey, {})).body.data).toBeNull();
  }, 60_000);
});

// Last: it moves the service clock past every open intent's lifetime.
describe('payment_intent.expired', () => {
  it('an expiry publishes once, whether a read or the worker finds it', async () => {
    const shop = await shopWithQueue();
    const read = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const swept = (await createIntent(app, shop, { amountUsdCents: 200 })).json();
    clock.advance((LIFETIME + 1) * 1000);
    // Read, paid and reconciled at once: each may try to move it; one does.
    const reads = await Promise.all([getIntent(app, shop.apiKey, read.id), pay(app, read.id), reconcile(app, shop.apiKey, read.id), getIntent(app, shop.apiKey, read.id)]);
    expect(reads[0]).toMatchObject({ status: 'expired' });
    expect(reads[1].statusCode).toBe(410);
    const events = await eventually(async () => {
      const found = await eventsIn(shop.queueId);
      return found.length === 2 && found;
    });
    expect(events.map((event) => event.payload).sort((a, b) => (a.amountUsdCents as number) - (b.amountUsdCents as number))).toEqual([
      { type: 'payment_intent.expired', intentId: read.id, merchantId: shop.merchantId, externalId: read.externalId, status: 'expired', amountUsdCents: 100, metadata: null, failureCode: null, paidVia: null, settlement: null },
      { type: 'payment_intent.expired', intentId: swept.id, merchantId: shop.merchantId, externalId: swept.externalId, status: 'expired', amountUsdCents: 200, metadata: null, failureCode: null, paidVia: null, settlement: null },
    ]);
    expect(events.map((event) => event.deduplication_key).sort()).toEqual([`payment_intent:${read.id}:expired`, `payment_intent:${swept.id}:expired`].sort());
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await getIntent(app, shop.apiKey, swept.id)).toMatchObject({ status: 'expired' });
    expect(await eventsIn(shop.queueId)).toHaveLength(2);
  }, 60_000);
});
