import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';
import { Faults } from './faults.js';
import { createIntent, createShop } from './fixtures.js';
import { buildPayApp, eventually, fundedPayer, getIntent, pay, reconcile, signedHeader, transfersTo } from './harness.js';

// Reconciliation settles an intent only from a final index row: with a finality depth of 3, a
// transfer the index has seen stays `settling` until three blocks sit on top of it.

const faults = new Faults();
let app: TestApp;

beforeAll(async () => {
  app = await buildPayApp({ ...faults.options(), env: { INDEXER_CONFIRMATIONS: '3' } });
});
afterAll(async () => {
  await app?.close();
});

const mine = () => app.ctx.chain.publicClient.request({ method: 'evm_mine' as never, params: [] as never });

describe('reconcile and finality', () => {
  it('keeps an intent settling (settlement_not_final) until its transfer is final, then settles it', async () => {
    const shop = await createShop(app);
    const payer = await fundedPayer(app, '10');
    const intent = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const header = await signedHeader(app, intent.id, payer);

    faults.crashAfterBroadcast();
    expect((await pay(app, intent.id, { 'payment-signature': header })).statusCode).toBe(503);
    const [transfer] = await transfersTo(app, shop.payTo);
    expect(transfer).toBeDefined();

    // The indexer sees the transfer, but its block is not final: reconcile must not settle.
    const waiting = await eventually(async () => {
      const body = (await reconcile(app, shop.apiKey, intent.id)).json();
      return body.failureCode === 'settlement_not_final' ? body : null;
    });
    expect(waiting).toMatchObject({ status: 'settling', transactionHash: null });

    for (let i = 0; i < 3; i += 1) await mine();
    const settled = await eventually(async () => {
      const body = (await reconcile(app, shop.apiKey, intent.id)).json();
      return body.status === 'settled' ? body : null;
    });
    expect(settled).toMatchObject({ transactionHash: transfer!.transactionHash, failureCode: null });
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'settled' });
  });
});
