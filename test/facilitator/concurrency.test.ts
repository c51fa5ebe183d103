// Concurrent settles over HTTP: distinct payments all land (relayer nonces stay correct); many
// settles of one payment broadcast exactly once, one of them is told success, all name that transaction.
import type { Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { balanceOf, fundedPayer, nonceOf, relayerTxCount, signAuthorization, transfersForNonce } from '../x402/support.js';
import { requirementsFor, settle } from './support.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => app?.close());

describe('concurrent settles', () => {
  it('25 distinct payments settled at once all succeed, each moving its own payment once', async () => {
    const payers = await Promise.all(Array.from({ length: 25 }, () => fundedPayer(app, '1')));
    const requirements = requirementsFor(app, '100');
    const payloads = await Promise.all(payers.map((p) => signAuthorization(p, requirements)));
    const results = await Promise.all(payloads.map((p) => settle(app, p, requirements)));
    for (const { status, body } of results) {
      expect(status).toBe(200);
      expect(body).toMatchObject({ success: true });
    }
    // Batched or not (batch.test.ts), each authorization has its own transfer.
    for (const [i, payload] of payloads.entries()) expect(await transfersForNonce(app, payers[i]!.address, nonceOf(payload))).toBe(1);
    expect(await balanceOf(app, requirements.payTo as Hex)).toBe(2500n);
  });

  it('10 concurrent settles of one payment: one transfer, one success, nine refusals naming it', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app, '100');
    const payload = await signAuthorization(payer, requirements);
    const relayer = app.ctx.chain.relayer!.address;
    const txBefore = await relayerTxCount(app, relayer);

    const results = await Promise.all(Array.from({ length: 10 }, () => settle(app, payload, requirements)));
    const hashes = new Set(results.map((r) => r.body.transaction));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(hashes.size).toBe(1);
    expect(results.filter((r) => r.body.success)).toHaveLength(1);
    for (const refused of results.filter((r) => !r.body.success)) {
      expect(refused.body).toMatchObject({ errorReason: 'invalid_exact_evm_nonce_already_used' });
    }

    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
    expect(await relayerTxCount(app, relayer)).toBe(txBefore + 1);
    expect(await balanceOf(app, requirements.payTo as Hex)).toBe(100n);
  });

  it('concurrent paid requests with one signature: one payment, one transfer, the same result to each copy of it', async () => {
    const payer = await fundedPayer(app, '1');
    const pingUrl = `${app.urls.api}/x402-test/ping`;
    const { readPaymentRequired, signPayment } = await import('../../src/x402/client.js');
    const res = await fetch(pingUrl);
    const { header, payload } = await signPayment(payer, readPaymentRequired((n) => res.headers.get(n), await res.json()));
    const answers = await Promise.all(Array.from({ length: 5 }, () => fetch(pingUrl, { headers: { 'PAYMENT-SIGNATURE': header } })));
    // The same payment is one purchase (x402_paid_requests): every copy gets its one result, none a second settle.
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(answers.map((a) => a.headers.get('payment-response'))).size).toBe(1);
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
  });
});
