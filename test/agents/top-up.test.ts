// Credits bought with x402 on the devchain, paid by the official client (@x402/fetch): the 402 challenge,
// the settle through our facilitator, the credit once (a replayed payment answers the same top-up), money
// read from the chain; refused payments credit nothing; and the reconciler resolving top-ups left settling.
import { x402Client, x402HTTPClient } from '@x402/core/client';
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import { sql } from 'drizzle-orm';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { settlementRecordOf } from '../../src/modules/credits/top-up.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/platform/ids.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { balanceOf, signAuthorization } from '../x402/support.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => app?.close());

const topUpUrl = () => `${app.urls.api}/credits/top-up`;
const credits = () => app.ctx.services.credits;

/** A payer with the official x402 client, allowed up to $1,000 a payment, funded with `usdg` on the devchain. */
async function officialPayer(usdg: string) {
  const account = privateKeyToAccount(generatePrivateKey());
  if (usdg !== '0') await app.ctx.chain.devchain!.fund(account.address, usdg);
  const client = x402Client.fromConfig({
    schemes: [{ network: app.ctx.chain.network as `${string}:${string}`, client: new ExactEvmScheme(account) }],
    spendControls: { allowedAssets: [{ network: app.ctx.chain.network as `${string}:${string}`, asset: app.ctx.chain.asset.address, maxAmountPerPayment: '1000000000' }] },
  });
  return { account, http: new x402HTTPClient(client) };
}

/** fetch that remembers the payment header the client sent. */
function recordingFetch() {
  const sent: string[] = [];
  const fetcher: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const header = request.headers.get('payment-signature');
    if (header) sent.push(header);
    return fetch(request);
  };
  return { fetcher, sent };
}

const post = (token: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(topUpUrl(), { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

async function challengeFor(token: string, amountUsdCents: number): Promise<PaymentRequirements> {
  const answer = await post(token, { amountUsdCents });
  expect(answer.status).toBe(402);
  return ((await answer.json()) as PaymentRequired).accepts[0]!;
}

describe('credit top-ups', () => {
  it('are paid with @x402/fetch, settled on chain, credited once; a replay answers the same top-up', async () => {
    const token = await app.identityToken('topper');
    const payer = await officialPayer('10');
    const requirements = await challengeFor(token, 500);
    expect(requirements).toMatchObject({ amount: '5000000', network: 'eip155:4663', asset: app.ctx.chain.asset.address });
    const payTo = requirements.payTo as `0x${string}`;
    const payToBefore = await balanceOf(app, payTo);

    const { fetcher, sent } = recordingFetch();
    const paid = await wrapFetchWithPayment(fetcher, payer.http)(topUpUrl(), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amountUsdCents: 500 }),
    });
    expect(paid.status, await paid.clone().text()).toBe(200);
    expect(paid.headers.get('payment-response')).toBeTruthy();
    const body = (await paid.json()) as { data: { topUp: { id: string; status: string; transaction: string; payer: string }; balanceUsdCents: number } };
    expect(body.data).toMatchObject({ topUp: { status: 'settled', amountUsdCents: 500, payer: payer.account.address.toLowerCase() }, balanceUsdCents: 500 });
    expect(body.data.topUp.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await balanceOf(app, payTo)).toBe(payToBefore + 5_000_000n);
    expect(await balanceOf(app, payer.account.address)).toBe(5_000_000n);

    // The same payment again: the same top-up, nothing credited or moved.
    const again = await post(token, { amountUsdCents: 500 }, { 'payment-signature': sent[0]! });
    expect(again.status).toBe(200);
    expect(((await again.json()) as typeof body).data).toEqual(body.data);
    expect(await credits().balance('topper')).toBe(500);
    expect(await balanceOf(app, payTo)).toBe(payToBefore + 5_000_000n);
    // Someone else presenting it gets nothing.
    const stolen = await post(await app.identityToken('thief'), { amountUsdCents: 500 }, { 'payment-signature': sent[0]! });
    expect(stolen.status).toBe(409);
    expect(await stolen.json()).toMatchObject({ code: 1005, data: { reason: 'payment_authorization_already_used' } });
    expect(await credits().balance('thief')).toBe(0);

    const transfers = await credits().store.transfersOf('user:topper');
    expect(transfers.map((t) => [t.cause, t.from_account, Number(t.amount_cents), t.top_up_id])).toEqual([['top_up', 'system:top-ups', 500, body.data.topUp.id]]);
  });

  it('with an Idempotency-Key, a retry (the official client again, or a payment signed anew) answers the first top-up: credited once, paid once', async () => {
    const token = await app.identityToken('keyed-topper');
    const payer = await officialPayer('10');
    const key = `top-up-${Date.now()}`;
    const requirements = await challengeFor(token, 300);
    const payToBefore = await balanceOf(app, requirements.payTo as `0x${string}`);
    const { fetcher, sent } = recordingFetch();
    const pay = () =>
      wrapFetchWithPayment(fetcher, payer.http)(topUpUrl(), {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ amountUsdCents: 300 }),
      });
    const first = await pay();
    const firstBody = await first.json();
    // The client's retry is answered before it is asked to pay again: it signs nothing more.
    const retry = await pay();
    expect(sent).toHaveLength(1);
    expect([first.status, retry.status, retry.headers.get('idempotent-replayed')]).toEqual([200, 200, 'true']);
    expect(await retry.json()).toEqual(firstBody);
    expect(retry.headers.get('payment-response')).toBe(first.headers.get('payment-response'));
    // A retry that carries a newly signed authorization: the same answer, and that authorization is never used.
    const signedAnew = await signAuthorization(payer.account, requirements, {}, { url: topUpUrl(), description: '', mimeType: 'application/json' });
    const resent = await post(token, { amountUsdCents: 300 }, { 'payment-signature': Buffer.from(JSON.stringify(signedAnew)).toString('base64'), 'idempotency-key': key });
    expect([resent.status, await resent.json()]).toEqual([200, firstBody]);
    expect(await credits().balance('keyed-topper')).toBe(300);
    expect(await balanceOf(app, requirements.payTo as `0x${string}`)).toBe(payToBefore + 3_000_000n);
    expect(await balanceOf(app, payer.account.address)).toBe(7_000_000n);
  });

  it('credits nothing for a payment of another amount, a malformed header, or one the facilitator refuses', async () => {
    const token = await app.identityToken('refused');
    const payer = privateKeyToAccount(generatePrivateKey()); // holds no USDG
    const requirements = await challengeFor(token, 200);
    const payload = await signAuthorization(payer, requirements, {}, { url: topUpUrl(), description: '', mimeType: 'application/json' });
    const encoded = Buffer.from(JSON.stringify(payload)).toString('base64');

    const otherAmount = await post(token, { amountUsdCents: 300 }, { 'payment-signature': encoded });
    expect(otherAmount.status).toBe(402);
    expect(((await otherAmount.json()) as PaymentRequired).error).toBe('no_matching_payment_requirements');

    expect((await post(token, { amountUsdCents: 200 }, { 'payment-signature': 'not base64 json' })).status).toBe(400);

    const unfunded = await post(token, { amountUsdCents: 200 }, { 'payment-signature': encoded });
    expect(unfunded.status).toBe(402);
    expect(((await unfunded.json()) as PaymentRequired).error).toBe('invalid_exact_evm_insufficient_balance');
    expect(await credits().balance('refused')).toBe(0);
    // The refused claim is gone: nothing left settling, and the same authorization may be sent once funded.
    const rows = await app.ctx.database.query<{ n: string }>(sql`select count(*)::text as n from credit_top_ups where user_id = 'refused'`);
    expect(rows[0]!.n).toBe('0');

    for (const amountUsdCents of [99, 100_001, 1.5, '100']) expect((await post(token, { amountUsdCents })).status, String(amountUsdCents)).toBe(400);
    expect((await fetch(topUpUrl(), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amountUsdCents":500}' })).status).toBe(401);
  });

  it('the reconciler credits a top-up left settling whose payment reached the chain, and fails one that can never pay', async () => {
    const token = await app.identityToken('crashed');
    const requirements = await challengeFor(token, 300);
    const payer: PrivateKeyAccount = privateKeyToAccount(generatePrivateKey());
    await app.ctx.chain.devchain!.fund(payer.address, '5');
    const payload: PaymentPayload = await signAuthorization(payer, requirements);
    const authorization = (payload.payload as { authorization: { nonce: string; validBefore: string } }).authorization;
    // As after a crash between the claim and the answer: the claim is written, the settle went through.
    const long = new Date(Date.now() - 10 * 60_000);
    const claim = (overrides: { nonce: string; validBefore: string; payer: string }) =>
      credits().store.claimTopUp({
        id: newId(),
        userId: 'crashed',
        amountCents: 300,
        network: requirements.network,
        asset: requirements.asset.toLowerCase(),
        payTo: requirements.payTo,
        amountAtomic: requirements.amount,
        ...overrides,
        createdAt: long,
        updatedAt: long,
      });
    const settling = await claim({ nonce: authorization.nonce.toLowerCase(), validBefore: authorization.validBefore, payer: payer.address.toLowerCase() });
    // The top-up's own settle (its payment-identifier) went through; the crash lost its answer.
    expect(await app.ctx.x402.settle(payload, requirements, settlementRecordOf(settling!.id, authorization.nonce))).toMatchObject({ kind: 'settled' });
    // And one whose authorization expired without ever being used.
    const dead = await claim({ nonce: `0x${'ab'.repeat(32)}`, validBefore: String(Math.floor(Date.now() / 1000) - 60), payer: payer.address.toLowerCase() });

    const loop = app.modules.find((m) => m.name === 'credits')!.loops!.find((l) => l.name === 'credits.top-up-reconcile')!;
    await loop.run(new AbortController().signal);
    expect(await credits().store.topUpById(settling!.id)).toMatchObject({ status: 'settled', transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await credits().store.topUpById(dead!.id)).toMatchObject({ status: 'failed', failure: 'authorization_expired' });
    expect(await credits().balance('crashed')).toBe(300);
    await loop.run(new AbortController().signal);
    expect(await credits().balance('crashed')).toBe(300);
    expect(await credits().store.ledgerBalance('user:crashed')).toBe(300);
  });
});
