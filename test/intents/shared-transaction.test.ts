// One transaction, several payments: a settlement batch pays many intents with one transaction, each with its
// own transfer. What makes a payment buy one intent is its transfer (chain_payment_uses, by transaction and
// log index), not the transaction's hash: intents sharing a batch all settle, and a facilitator's answer
// naming a transaction whose transfer is not this payment's never settles an intent.
import http from 'node:http';
import net from 'node:net';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainPaymentUses } from '../../src/chain/tables.js';
import { signPayment } from '../../src/x402/client.js';
import type { TestApp } from '../helpers/test-app.js';
import { freePort } from '../wallets/helpers.js';
import { createIntent, createShop } from './fixtures.js';
import { buildPayApp, challengeOf, fundedPayer, getIntent, pay, signedHeader, transfersTo } from './harness.js';

/**
 * A facilitator in front of ours: passes every call through, except that an armed settle is answered
 * `success: true` with a transaction of the test's choosing, and never reaches the real facilitator.
 */
class LyingFacilitator {
  private server!: http.Server;
  private lie: ((body: { paymentPayload: { payload: { authorization: { from: string } } } }) => unknown) | null = null;
  url = '';

  async start(target: string): Promise<void> {
    this.server = http.createServer(async (request, response) => {
      let body = '';
      for await (const chunk of request) body += chunk;
      const lie = this.lie;
      if (lie && request.url?.endsWith('/settle')) {
        this.lie = null;
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(lie(JSON.parse(body))));
        return;
      }
      const real = await fetch(`${target}${request.url}`, { method: request.method, headers: { 'content-type': 'application/json' }, body: request.method === 'GET' ? undefined : body });
      response.writeHead(real.status, { 'content-type': real.headers.get('content-type') ?? 'application/json' }).end(await real.text());
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  /** The next settle is answered success with `transaction`. */
  answerNextSettleWith(transaction: string): void {
    this.lie = (body) => ({ success: true, transaction, network: 'eip155:4663', payer: body.paymentPayload.payload.authorization.from });
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

const facilitator = new LyingFacilitator();
let app: TestApp;

beforeAll(async () => {
  const port = await freePort();
  await facilitator.start(`http://127.0.0.1:${port}`);
  app = await buildPayApp({
    // Batches of up to 16 settles, each held open long enough that concurrent pays share one.
    env: { FACILITATOR_PORT: String(port), FACILITATOR_URL: facilitator.url, FACILITATOR_BATCH_MAX_CALLS: '16', FACILITATOR_BATCH_WAIT_MS: '300', FACILITATOR_BATCH_IDLE: 'wait' },
  });
});
afterAll(async () => {
  await app?.close();
  await facilitator.stop();
});

const claimsOf = (hash: string) =>
  app.ctx.db.select({ logIndex: chainPaymentUses.logIndex, claimant: chainPaymentUses.claimant }).from(chainPaymentUses).where(eq(chainPaymentUses.transactionHash, hash.toLowerCase()));

describe('intents sharing one settlement transaction', () => {
  it('each settles with its own transfer when concurrent payments leave in one batch', async () => {
    const shop = await createShop(app);
    const payers = await Promise.all(Array.from({ length: 6 }, () => fundedPayer(app, '20')));
    // Five payers, and a sixth paying two intents: one payer's authorizations may share a batch too.
    const intents = await Promise.all(Array.from({ length: 7 }, () => createIntent(app, shop, { amountUsdCents: 100 }).then((r) => r.json())));
    const headers = await Promise.all(intents.map((intent, i) => signedHeader(app, intent.id, payers[Math.min(i, 5)]!)));

    const answers = await Promise.all(intents.map((intent, i) => pay(app, intent.id, { 'payment-signature': headers[i]! })));
    for (const answer of answers) expect(answer.statusCode, answer.body).toBe(200);

    const hashes = answers.map((answer) => answer.json().settlement.transaction as string);
    expect(new Set(hashes).size).toBeLessThan(hashes.length); // at least two shared a transaction
    for (const [i, intent] of intents.entries()) {
      expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'settled', transactionHash: hashes[i] });
    }
    // One transfer each, and each claimed by one intent.
    expect(await transfersTo(app, shop.payTo)).toHaveLength(7);
    const claims = (await Promise.all([...new Set(hashes)].map(claimsOf))).flat();
    expect(claims).toHaveLength(7);
    expect(new Set(claims.map((claim) => claim.claimant)).size).toBe(7);
  });

  it('a settle answered with a transaction that paid another intent does not settle this one', async () => {
    const shop = await createShop(app);
    const payer = await fundedPayer(app, '20');
    const first = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const paid = await pay(app, first.id, { 'payment-signature': await signedHeader(app, first.id, payer) });
    expect(paid.statusCode, paid.body).toBe(200);
    const usedHash = paid.json().settlement.transaction as string;

    const second = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const { header } = await signPayment(payer, await challengeOf(app, second.id));
    facilitator.answerNextSettleWith(usedHash);
    const answer = await pay(app, second.id, { 'payment-signature': header });
    // The answer is not provably this payment's transfer: unknown, left to reconciliation, never settled.
    expect(answer.statusCode).toBe(503);
    expect(answer.json()).toMatchObject({ code: 'settlement_result_unknown' });
    expect(await getIntent(app, shop.apiKey, second.id)).toMatchObject({ status: 'settling', transactionHash: null });
    expect(await getIntent(app, shop.apiKey, first.id)).toMatchObject({ status: 'settled', transactionHash: usedHash });
    expect(await transfersTo(app, shop.payTo)).toHaveLength(1);
    expect(await claimsOf(usedHash)).toHaveLength(1);
  });
});
