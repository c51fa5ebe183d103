// The facilitator origin's x402 v2 API: /supported, /verify, /settle, what it refuses, and the USDG
// quirk (a used nonce "succeeds" on chain while moving nothing).
import type { Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { judgeReceipt } from '../../src/x402/facilitator/receipt.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { balanceOf, executeElsewhere, fundedPayer, nonceOf, randomAddress, relayerTxCount, signAuthorization, transfersForNonce } from '../x402/support.js';
import { post, requirementsFor, settle, verify } from './support.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => app?.close());

describe('GET /supported', () => {
  it('lists exact, upto and batch-settlement on eip155:4663 (x402 v2 only) and our relayer as signer', async () => {
    const res = await fetch(`${app.urls.facilitator}/supported`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      kinds: [
        { x402Version: 2, scheme: 'exact', network: 'eip155:4663' },
        // upto: the relayer a payer names as its facilitator (the proxy accepts the settle from that key alone).
        { x402Version: 2, scheme: 'upto', network: 'eip155:4663', extra: { facilitatorAddress: app.ctx.chain.relayer!.address } },
        // No receiverAuthorizer: this facilitator signs no claims or refunds for sellers.
        { x402Version: 2, scheme: 'batch-settlement', network: 'eip155:4663' },
      ],
      extensions: ['payment-identifier'],
      signers: { 'eip155:*': app.ctx.chain.facilitatorSigners() },
    });
    expect(app.ctx.chain.facilitatorSigners()).toEqual([app.ctx.chain.relayer!.address]);
  });
});

describe('POST /verify and /settle', () => {
  it('verifies without moving money, then settles once', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app, '250');
    const payload = await signAuthorization(payer, requirements);
    const before = await balanceOf(app, payer.address);

    expect(await verify(app, payload, requirements)).toEqual({ status: 200, body: { isValid: true, payer: payer.address } });
    expect(await balanceOf(app, payer.address)).toBe(before);

    const settled = await settle(app, payload, requirements);
    expect(settled.status).toBe(200);
    expect(settled.body).toMatchObject({ success: true, network: 'eip155:4663', payer: payer.address });
    expect(await balanceOf(app, payer.address)).toBe(before - 250n);
    expect(await balanceOf(app, requirements.payTo as Hex)).toBe(250n);

    // verify after settlement: the authorization is used (the simulation alone would pass: USDG quirk)
    expect((await verify(app, payload, requirements)).body).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_evm_nonce_already_used' });
  });

  it('says success once: a settle again is refused with the transaction, and broadcasts nothing', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const payload = await signAuthorization(payer, requirements);
    const first = (await settle(app, payload, requirements)).body;
    expect(first).toMatchObject({ success: true });
    const txCount = await relayerTxCount(app, app.ctx.chain.relayer!.address);
    const again = await settle(app, payload, requirements);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_nonce_already_used', transaction: first.transaction });
    expect(again.body).not.toHaveProperty('extra');
    expect(await relayerTxCount(app, app.ctx.chain.relayer!.address)).toBe(txCount);
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
  });

  it('refuses what it does not support, with x402 reason codes', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const payload = await signAuthorization(payer, requirements);
    const permit2 = { ...payload, payload: { signature: '0x00', permit2Authorization: { from: payer.address } } };
    const sponsored = { ...permit2, extensions: { eip2612GasSponsoring: { info: {} } } };
    const cases: Array<[unknown, unknown, string]> = [
      [{ ...payload, x402Version: 1 }, requirements, 'invalid_x402_version'],
      [payload, { ...requirements, network: 'eip155:8453' }, 'invalid_network'],
      [payload, { ...requirements, scheme: 'deferred' }, 'unsupported_scheme'],
      [payload, { ...requirements, asset: randomAddress() }, 'invalid_payment_requirements'],
      // Permit2 payloads are settled (test/facilitator/permit2.test.ts); a malformed one, or one asking for gas sponsoring, is not.
      [permit2, requirements, 'invalid_payload'],
      [sponsored, requirements, 'unsupported_payload_type'],
      [{ ...payload, payload: { signature: '0x1234' } }, requirements, 'invalid_payload'],
    ];
    for (const [p, r, reason] of cases) {
      expect((await verify(app, p as never, r as never)).body).toMatchObject({ isValid: false, invalidReason: reason });
      expect((await settle(app, p as never, r as never)).body).toMatchObject({ success: false, errorReason: reason, transaction: '' });
    }
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(0);
  });

  it('an out-of-range value is an invalid payment, not a server error', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const payload = await signAuthorization(payer, requirements);
    const auth = (payload.payload as { authorization: Record<string, string> }).authorization;
    const huge = { ...payload, payload: { ...payload.payload, authorization: { ...auth, value: (2n ** 256n).toString() } } };
    const verified = await verify(app, huge, requirements);
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ isValid: false });
  });

  it('answers 400 with a reason for a malformed body', async () => {
    const bad = await post(app, 'verify', { x402Version: 2 }, {});
    expect(bad).toMatchObject({ status: 400, body: { isValid: false, invalidReason: 'invalid_payload' } });
    const badSettle = await post(app, 'settle', { x402Version: 2 }, {});
    expect(badSettle).toMatchObject({ status: 400, body: { success: false, errorReason: 'invalid_payload', transaction: '' } });
    const res = await fetch(`${app.urls.facilitator}/settle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"x402Version":"two"}' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
  });

  it('a forged payload cannot claim a real authorization nonce first', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const real = await signAuthorization(payer, requirements);
    const forged = await signAuthorization(payer, requirements, { nonce: nonceOf(real), signer: (await fundedPayer(app, '0')) });
    expect((await settle(app, forged, requirements)).body).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_signature' });
    expect((await settle(app, real, requirements)).body).toMatchObject({ success: true });
  });
});

describe('USDG quirk', () => {
  it('a mined reuse of a nonce (status success, AuthorizationAlreadyUsed, no Transfer) is judged a failure', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const payload = await signAuthorization(payer, requirements);
    await executeElsewhere(app, payload);
    const receipt = await executeElsewhere(app, payload);
    expect(receipt.status).toBe('success');
    const expected = { asset: requirements.asset, payer: payer.address, payTo: requirements.payTo, amount: requirements.amount, nonce: nonceOf(payload) };
    expect(judgeReceipt(receipt, expected)).toMatchObject({ ok: false, reason: 'invalid_exact_evm_nonce_already_used' });
  });
});
