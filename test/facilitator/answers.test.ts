// The facilitator's answers per authorization: one `success: true`, ever, a retry carrying the
// payment-identifier included (the id is not signed: a client can copy it onto every copy of a
// payment); the id's conflicts; and a front-run (someone else executed the authorization) that counts
// as the payment, once.
import type { PaymentPayload } from '@x402/core/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balanceOf, executeElsewhere, fundedPayer, nonceOf, randomAddress, relayerTxCount, signAuthorization, transfersForNonce } from '../x402/support.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { requirementsFor, settle } from './support.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => app?.close());

const withId = (payload: PaymentPayload, id: string): PaymentPayload => ({
  ...payload,
  extensions: { 'payment-identifier': { info: { required: false, id } } },
});
const relayerTxs = () => relayerTxCount(app, app.ctx.chain.relayer!.address);

describe('payment-identifier', () => {
  it('after its success was answered, a retry with the same id and payload is refused naming the transaction', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const payload = withId(await signAuthorization(payer, requirements), 'pay_first_attempt_0001');
    const first = await settle(app, payload, requirements);
    expect(first.body).toMatchObject({ success: true, payer: payer.address });
    const sent = await relayerTxs();

    // The same id and payload, another payload over the same nonce (a later validBefore), the same payload under another id.
    const validBefore = BigInt((payload.payload as { authorization: { validBefore: string } }).authorization.validBefore) + 1n;
    for (const other of [payload, await signAuthorization(payer, requirements, { nonce: nonceOf(payload), validBefore }), withId(payload, 'pay_someone_else_0002')]) {
      expect((await settle(app, other, requirements)).body).toMatchObject({
        success: false,
        errorReason: 'invalid_exact_evm_nonce_already_used',
        transaction: first.body.transaction,
      });
    }
    expect(await relayerTxs()).toBe(sent);
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
  });

  it('8 concurrent copies of one payment carrying one id: one success, one transfer', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const payload = withId(await signAuthorization(payer, requirements), 'pay_copied_by_client_05');
    const answers = await Promise.all(Array.from({ length: 8 }, () => settle(app, payload, requirements)));
    expect(answers.filter((a) => a.body.success)).toHaveLength(1);
    const transaction = answers.find((a) => a.body.success)!.body.transaction;
    for (const refused of answers.filter((a) => !a.body.success)) {
      expect(refused.body).toMatchObject({ errorReason: 'invalid_exact_evm_nonce_already_used', transaction });
    }
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
  });

  it('a JSON Schema sent inside the extension is never run (a catastrophic pattern cannot stall the node)', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const payload: PaymentPayload = {
      ...(await signAuthorization(payer, requirements)),
      extensions: {
        'payment-identifier': {
          info: { required: false, id: 'pay_schema_attack_0006', x: `${'a'.repeat(40)}!` },
          schema: { type: 'object', properties: { x: { type: 'string', pattern: '^(a+)+$' } } },
        },
      },
    };
    const started = Date.now();
    expect((await settle(app, payload, requirements)).body).toMatchObject({ success: true });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('the same id with another payload is a 409 conflict and moves nothing', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const first = withId(await signAuthorization(payer, requirements), 'pay_conflicting_id_0003');
    expect((await settle(app, first, requirements)).body).toMatchObject({ success: true });
    const second = withId(await signAuthorization(payer, requirements), 'pay_conflicting_id_0003');
    const answer = await settle(app, second, requirements);
    expect(answer.status).toBe(409);
    expect(answer.body).toMatchObject({ success: false, errorReason: 'payment_identifier_conflict' });
    expect(await transfersForNonce(app, payer.address, nonceOf(second))).toBe(0);
  });

  it('concurrent settles of two payloads under one id: one settles, the other is a conflict', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const payloads = await Promise.all([0, 1].map(async () => withId(await signAuthorization(payer, requirements), 'pay_raced_identifier_04')));
    const answers = await Promise.all(payloads.map((p) => settle(app, p, requirements)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    const moved = await Promise.all(payloads.map((p) => transfersForNonce(app, payer.address, nonceOf(p))));
    expect(moved.reduce((a, b) => a + b, 0)).toBe(1);
  });

  it('an id outside the extension rules is an invalid payload', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const payload = withId(await signAuthorization(payer, requirements), 'short');
    expect((await settle(app, payload, requirements)).body).toMatchObject({ success: false, errorReason: 'invalid_payload', errorMessage: expect.stringContaining('16-128') });
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(0);
  });
});

describe('front-run: the authorization executed by someone else', () => {
  it('counts as the payment once, with that transaction; nothing is sent', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app, '300');
    const payload = await signAuthorization(payer, requirements);
    const receipt = await executeElsewhere(app, payload);
    const sent = await relayerTxs();

    const answers = await Promise.all(Array.from({ length: 4 }, () => settle(app, payload, requirements)));
    const successes = answers.filter((a) => a.body.success);
    expect(successes).toHaveLength(1);
    expect(successes[0]!.body).toMatchObject({ transaction: receipt.transactionHash, payer: payer.address });
    for (const refused of answers.filter((a) => !a.body.success)) {
      expect(refused.body).toMatchObject({ errorReason: 'invalid_exact_evm_nonce_already_used', transaction: receipt.transactionHash });
    }
    expect(await relayerTxs()).toBe(sent);
    expect(await balanceOf(app, requirements.payTo as `0x${string}`)).toBe(300n);
  });

  it('is not credited to a payload that pays someone else or carries a forged signature', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const payload = await signAuthorization(payer, requirements);
    await executeElsewhere(app, payload);
    const forged = await signAuthorization(payer, requirements, { nonce: nonceOf(payload), signer: (await fundedPayer(app, '0')) });
    const otherSeller = requirementsFor(app, requirements.amount, randomAddress());
    expect((await settle(app, forged, requirements)).body).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_nonce_already_used' });
    expect((await settle(app, payload, otherSeller)).body).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_recipient_mismatch' });
    // The real payload still gets its one success afterwards.
    expect((await settle(app, payload, requirements)).body).toMatchObject({ success: true });
  });
});
