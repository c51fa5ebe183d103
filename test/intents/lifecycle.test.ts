import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcCall } from '../../src/chain/rpc.js';
import { ManualClock } from '../../src/platform/clock.js';
import { signPayment } from '../../src/x402/client.js';
import type { TestApp } from '../helpers/test-app.js';
import { Faults } from './faults.js';
import { createIntent, createShop, type Shop } from './fixtures.js';
import { buildPayApp, challengeOf, eventually, fundedPayer, getIntent, pay, reconcile, signedHeader, transfersTo } from './harness.js';

// Expiry, the reconciliation worker and expired authorizations. The service clock is manual
// (intent expiry, the worker's grace period); the chain and the facilitator keep wall-clock time.

const LIFETIME = 3600;
const PAY_TIMEOUT = 10;
const GRACE = 30;
const clock = new ManualClock();
const faults = new Faults();
let app: TestApp;
let shop: Shop;

beforeAll(async () => {
  app = await buildPayApp({
    ...faults.options(),
    clock,
    env: {
      INTENT_LIFETIME_SECONDS: String(LIFETIME),
      INTENT_PAY_TIMEOUT_SECONDS: String(PAY_TIMEOUT),
      INTENT_RECONCILE_GRACE_SECONDS: String(GRACE),
      INTENT_RECONCILE_INTERVAL_MS: '100',
    },
  });
  shop = await createShop(app);
});
afterAll(async () => {
  await app?.close();
});

const storedStatus = async (id: string) =>
  (await app.ctx.database.query<{ status: string }>(sql`select status from payment_intents where id = ${id}`))[0]?.status;

const loseNextSettlement = () => faults.onNextSettle(async () => ({ kind: 'unknown', transaction: null, message: 'lost answer (injected)' }));

describe('expiry', () => {
  it('uses the configured lifetime and answers 410 intent_expired once it has passed', async () => {
    const intent = (await createIntent(app, shop)).json();
    expect(Date.parse(intent.expiresAt) - Date.parse(intent.createdAt)).toBe(LIFETIME * 1000);
    const payer = await fundedPayer(app, '20');
    const header = await signedHeader(app, intent.id, payer);

    clock.advance(LIFETIME * 1000 - 1);
    expect((await pay(app, intent.id)).statusCode).toBe(402);
    clock.advance(1);
    for (const headers of [{}, { 'payment-signature': header }] as Record<string, string>[]) {
      const response = await pay(app, intent.id, headers);
      expect(response.statusCode).toBe(410);
      expect(response.json()).toMatchObject({ code: 'intent_expired', details: { expiresAt: intent.expiresAt } });
    }
    expect(await storedStatus(intent.id)).toBe('expired');
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'expired', transactionHash: null });
    expect((await reconcile(app, shop.apiKey, intent.id)).json()).toMatchObject({ status: 'expired' });
    expect(await transfersTo(app, shop.payTo)).toHaveLength(0);
  });

  it('expires overdue pending intents in the background', async () => {
    const intent = (await createIntent(app, shop)).json();
    clock.advance(LIFETIME * 1000 + 1);
    await eventually(async () => (await storedStatus(intent.id)) === 'expired');
  });
});

describe('reconciliation worker', () => {
  it('settles a crashed settlement from the index once the grace period has passed', async () => {
    const mine = await createShop(app);
    const payer = await fundedPayer(app, '20');
    const intent = (await createIntent(app, mine, { amountUsdCents: 150 })).json();
    const header = await signedHeader(app, intent.id, payer);
    faults.crashAfterBroadcast();
    expect((await pay(app, intent.id, { 'payment-signature': header })).json().code).toBe('settlement_result_unknown');
    const [transfer] = await transfersTo(app, mine.payTo);

    // Within the grace period the worker leaves it to the request that may still be running.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await storedStatus(intent.id)).toBe('settling');
    clock.advance((GRACE + 1) * 1000);
    const settled = await eventually(async () => {
      const current = await getIntent(app, mine.apiKey, intent.id);
      return current.status === 'settled' && current;
    });
    expect(settled.transactionHash).toBe(transfer.transactionHash);
    expect(await transfersTo(app, mine.payTo)).toHaveLength(1);
  });
});

describe('expired unused authorization', () => {
  it('moves a settling intent back to pending (or to expired past expiresAt) once its authorization can no longer be used', async () => {
    const mine = await createShop(app);
    const payer = await fundedPayer(app, '50');
    // This one's own lifetime will have ended by the time its authorization expires.
    const ending = (await createIntent(app, mine, { amountUsdCents: 100 })).json();
    clock.advance((LIFETIME - 60) * 1000);
    const open = (await createIntent(app, mine, { amountUsdCents: 100 })).json();
    const challenge = await challengeOf(app, open.id);
    const header = (await signPayment(payer, challenge)).header;
    for (const [intent, signed] of [[ending, await signedHeader(app, ending.id, payer)], [open, header]] as const) {
      loseNextSettlement();
      expect((await pay(app, intent.id, { 'payment-signature': signed })).json().code).toBe('settlement_result_unknown');
    }
    // Still valid on chain: reconcile cannot decide, and keeps it settling.
    expect((await reconcile(app, mine.apiKey, open.id)).json()).toMatchObject({ status: 'settling', failureCode: 'settlement_result_unknown' });

    // Let validBefore pass on chain (a new block carries the time), and the service clock past `ending`.
    await new Promise((resolve) => setTimeout(resolve, (PAY_TIMEOUT + 1) * 1000));
    await rpcCall(app.ctx.chain.rpcUrl, 'evm_mine');
    clock.advance(120 * 1000);

    const reopened = (await reconcile(app, mine.apiKey, open.id)).json();
    expect(reopened).toMatchObject({ status: 'pending', transactionHash: null, failureCode: 'authorization_expired' });
    expect((await reconcile(app, mine.apiKey, ending.id)).json()).toMatchObject({ status: 'expired', failureCode: 'authorization_expired' });

    // The dead authorization is never accepted again; a new one pays the intent.
    expect((await pay(app, open.id, { 'payment-signature': header })).json()).toMatchObject({ code: 'payment_authorization_already_used' });
    const paid = await pay(app, open.id, { 'payment-signature': await signedHeader(app, open.id, payer) });
    expect(paid.statusCode).toBe(200);
    expect(await getIntent(app, mine.apiKey, open.id)).toMatchObject({ status: 'settled', failureCode: null });
    expect(await transfersTo(app, mine.payTo)).toHaveLength(1);
  }, 60_000);
});
