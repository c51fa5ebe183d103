// Our own paid endpoints against an honest payer whose answer was lost, and against whoever copies its
// payment. The honest retry gets the resource (the same result, never `nonce_already_used` as "do not pay
// again"); a copy buys nothing that was not bought already; a payment buys one resource.
import { encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload } from '@x402/core/types';
import { appendPaymentIdentifierToExtensions, declarePaymentIdentifierExtension, PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier';
import { getAddress, type Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcCall } from '../../src/chain/rpc.js';
import { readPaymentRequired, readSettlement, signPayment } from '../../src/x402/client.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { fundedPayer, nonceOf, transfersForNonce } from '../x402/support.js';
import { batchBuyer, channelOf, channelState, NETWORK, startBatchSeller } from '../facilitator/batch-support.js';
import { relayerState } from '../facilitator/permit2-support.js';
import { paymentsTo, checkLedger, reportTally } from './support.js';

let app: TestApp;
const ping = () => `${app.urls.api}/x402-test/ping`;

beforeAll(async () => {
  // A receipt wait short enough that a transaction held in the pool makes the endpoint's settle unknown.
  app = await buildTestApp({ env: { FACILITATOR_CONFIRMATION_TIMEOUT_MS: '300' } });
});
afterAll(async () => {
  reportTally('retries');
  await rpcCall(app.ctx.chain.rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
  await app?.close();
});

async function signedPing(payerFunds = '1') {
  const payer = await fundedPayer(app, payerFunds);
  const challenge = await fetch(ping());
  const required = readPaymentRequired((name) => challenge.headers.get(name), await challenge.json());
  const { payload } = await signPayment(payer, required);
  return { payer, payload, payTo: getAddress(required.accepts[0]!.payTo) as Address };
}

const send = (payload: PaymentPayload) => fetch(ping(), { headers: { 'payment-signature': encodePaymentSignatureHeader(payload) } });

describe('an honest payer whose answer was lost', () => {
  it('retries the same payment after an unknown settle and gets the resource with the one transaction', async () => {
    const { payer, payload, payTo } = await signedPing();
    const before = await paymentsTo(app, payTo);
    const rpc = app.ctx.chain.rpcUrl;
    await rpcCall(rpc, 'evm_setAutomine', [false]);
    let first: Response;
    try {
      first = await send(payload);
    } finally {
      await rpcCall(rpc, 'evm_setAutomine', [true]);
    }
    expect(first.status).toBe(503);
    expect(((await first.json()) as { error: { code: string } }).error.code).toBe('settlement_result_unknown');
    await rpcCall(rpc, 'evm_mine', []);

    const retried = await send(payload);
    const again = await send(payload);

    const paid = (await paymentsTo(app, payTo)).length - before.length;
    // One purchase: served once, its retries given the same result.
    checkLedger(1, paid);
    expect(retried.status).toBe(200);
    expect(await retried.json()).toEqual({ message: 'paid pong' });
    const settlement = readSettlement((name) => retried.headers.get(name));
    expect(settlement).toMatchObject({ success: true, payer: payer.address });
    expect(again.status).toBe(200);
    expect(readSettlement((name) => again.headers.get(name)).transaction).toBe(settlement.transaction);
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
    expect(paid).toBe(1);
  });
});

describe('a seller whose batch-settlement claim was answered pending', () => {
  it("retries the same claim with the official channel manager after it mined and gets the one success; nothing is sent again", async () => {
    const seller = await startBatchSeller(app, '1000');
    try {
      const payer = await fundedPayer(app, '1');
      const buyer = batchBuyer(app, payer);
      for (let i = 0; i < 2; i++) expect((await buyer.pay(`${seller.url}/call`)).status).toBe(200);
      const manager = seller.scheme.createChannelManager(seller.facilitator, NETWORK, app.ctx.chain.asset.address);
      const before = await relayerState(app);
      const rpc = app.ctx.chain.rpcUrl;
      await rpcCall(rpc, 'evm_setAutomine', [false]);
      try {
        await expect(manager.claim()).rejects.toThrow(/settlement_pending|pending/);
      } finally {
        await rpcCall(rpc, 'evm_setAutomine', [true]);
      }
      await rpcCall(rpc, 'evm_mine', []);
      const { channelId } = channelOf(payer.address, seller, app.ctx.chain.asset.address);
      expect((await channelState(app, channelId)).totalClaimed).toBe(2000n);
      // The manager still holds the vouchers as unclaimed and sends the same claim again: it is told the claim paid.
      const [retried] = await manager.claim();
      expect(retried!.vouchers).toBe(1);
      expect((await app.ctx.chain.publicClient.getTransactionReceipt({ hash: retried!.transaction as `0x${string}` })).status).toBe('success');
      expect((await relayerState(app)).sent - before.sent).toBe(1);
    } finally {
      await seller.close();
    }
  });
});

describe("a payment carrying the payer's own payment-identifier", () => {
  it('its retry with that id gets the result; a copy without it or under another id gets nothing', async () => {
    const { payer, payload, payTo } = await signedPing();
    const withId = (id: string): PaymentPayload => ({
      ...payload,
      extensions: appendPaymentIdentifierToExtensions({ [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension(false) }, id),
    });
    const mine = withId('pay_0123456789abcdef');
    const before = await paymentsTo(app, payTo);

    const first = await send(mine);
    const copies = [await send(payload), await send(withId('pay_fedcba9876543210'))];
    const retry = await send(mine);

    const paid = (await paymentsTo(app, payTo)).length - before.length;
    checkLedger(copies.filter((c) => c.status === 200).length + 1, paid);
    expect(first.status).toBe(200);
    expect(copies.map((c) => c.status)).toEqual([402, 402]);
    for (const copy of copies) expect(((await copy.json()) as { error: string }).error).toBe('invalid_exact_evm_nonce_already_used');
    expect(retry.status).toBe(200);
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
  });
});
