// Payment-intent outcomes on /metrics, counted where each is decided (the pay request's settle,
// reconciliation from the chain, the expiry sweep), on the devchain with faults injected around the
// real facilitator; the final statuses summed over paths match the intents' stored statuses.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import type { TestApp } from '../helpers/test-app.js';
import { Faults } from '../intents/faults.js';
import { createIntent, createShop, type Shop } from '../intents/fixtures.js';
import { buildPayApp, eventually, fundedPayer, pay, reconcile, signedHeader } from '../intents/harness.js';

const LIFETIME_SECONDS = 3600;
const clock = new ManualClock();
const faults = new Faults();
let app: TestApp;
let shop: Shop;

beforeAll(async () => {
  app = await buildPayApp({ ...faults.options(), clock, env: { INTENT_LIFETIME_SECONDS: String(LIFETIME_SECONDS), INTENT_RECONCILE_INTERVAL_MS: '100' } });
  shop = await createShop(app);
}, 120_000);
afterAll(async () => app?.close());

/** tollgate_intent_outcomes_total by "path/outcome", from the primary origin's /metrics. */
async function outcomes(): Promise<Record<string, number>> {
  const text = await (await fetch(`${app.urls.api}/metrics`)).text();
  const found: Record<string, number> = {};
  for (const [, path, outcome, value] of text.matchAll(/^tollgate_intent_outcomes_total\{path="(\w+)",outcome="(\w+)"\} (\d+)$/gm)) found[`${path}/${outcome}`] = Number(value);
  return found;
}

describe('intent outcomes', () => {
  it('counts each settle by its outcome, the moves reconciliation and expiry make, and sums to the stored statuses', async () => {
    const payer = await fundedPayer(app, '100');
    const newIntent = async () => (await createIntent(app, shop, { amountUsdCents: 100 })).json().id as string;
    const payWith = async (id: string) => pay(app, id, { 'payment-signature': await signedHeader(app, id, payer) });

    expect((await payWith(await newIntent())).statusCode).toBe(200);
    faults.onNextSettle(async () => ({ kind: 'unavailable', message: 'connection refused (injected)' }));
    expect((await payWith(await newIntent())).json()).toMatchObject({ code: 'facilitator_unavailable' });
    faults.onNextSettle(async () => ({
      kind: 'failed',
      reason: 'invalid_exact_evm_insufficient_balance',
      message: 'insufficient balance (injected)',
      response: { success: false, errorReason: 'invalid_exact_evm_insufficient_balance', transaction: '', network: 'eip155:4663' },
    }));
    // Refused before any transfer: pending again (reopened), payable.
    expect((await payWith(await newIntent())).json()).toMatchObject({ error: 'invalid_exact_evm_insufficient_balance' });
    const lost = await newIntent();
    faults.crashAfterBroadcast();
    expect((await payWith(lost)).json()).toMatchObject({ code: 'settlement_result_unknown' });
    await newIntent(); // never paid

    expect(await outcomes()).toEqual({ 'pay/settled': 1, 'pay/released': 1, 'pay/reopened': 1, 'pay/unknown': 1 });
    await eventually(async () => (await reconcile(app, shop.apiKey, lost)).json().status === 'settled');
    expect((await outcomes())['reconcile/settled']).toBe(1);

    // Past their lifetime the three pending ones (the released one, the reopened one and the unpaid one) expire in the sweep.
    clock.advance((LIFETIME_SECONDS + 1) * 1000);
    await expect.poll(async () => (await outcomes())['expiry/expired'], { timeout: 15_000 }).toBe(3);

    const counted = await outcomes();
    const final = (status: string) => Object.entries(counted).filter(([key]) => key.endsWith(`/${status}`)).reduce((sum, [, value]) => sum + value, 0);
    const stored = await app.ctx.database.query<{ status: string; n: number }>(sql`select status, count(*)::int as n from payment_intents group by status`);
    expect(Object.fromEntries(stored.map((row) => [row.status, Number(row.n)]))).toEqual({ settled: final('settled'), expired: final('expired') });
    expect(final('failed')).toBe(0);
    expect(final('settled')).toBe(2);
  });
});
