// Bad payments against /x402-test/ping: each answers 402 carrying the facilitator's reason, and no
// money moves. The payloads echo the challenge (so the resource server's match passes) and differ
// only where the facilitator has to catch them.
import { encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequired } from '@x402/core/types';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPaymentRequired } from '../../src/x402/client.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { balanceOf, fundedPayer, randomAddress, signAuthorization } from './support.js';

let app: TestApp;
let pingUrl: string;
let challenge: PaymentRequired;
let payer: PrivateKeyAccount;

beforeAll(async () => {
  app = await buildTestApp();
  pingUrl = `${app.urls.api}/x402-test/ping`;
  const res = await fetch(pingUrl);
  challenge = readPaymentRequired((n) => res.headers.get(n), await res.json());
  payer = await fundedPayer(app, '1');
});
afterAll(async () => app?.close());

async function pay(payload: PaymentPayload): Promise<{ status: number; error?: string }> {
  const res = await fetch(pingUrl, { headers: { 'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(payload) } });
  const body = (await res.json()) as PaymentRequired;
  return { status: res.status, error: body.error };
}

const now = () => BigInt(Math.floor(Date.now() / 1000));

describe('rejected payments', () => {
  const cases: Array<[string, string, () => Promise<PaymentPayload>]> = [
    ['expired authorization', 'invalid_exact_evm_payload_authorization_valid_before', () =>
      signAuthorization(payer, challenge.accepts[0], { validBefore: now() - 10n })],
    ['not yet valid authorization', 'invalid_exact_evm_payload_authorization_valid_after', () =>
      signAuthorization(payer, challenge.accepts[0], { validAfter: now() + 600n })],
    ['wrong amount', 'invalid_exact_evm_payload_authorization_value_mismatch', () =>
      signAuthorization(payer, challenge.accepts[0], { value: '99' })],
    ['wrong payTo', 'invalid_exact_evm_recipient_mismatch', () =>
      signAuthorization(payer, challenge.accepts[0], { to: randomAddress() })],
    ['wrong asset (signed for another token)', 'invalid_exact_evm_signature', () =>
      signAuthorization(payer, challenge.accepts[0], { verifyingContract: randomAddress() })],
    ['bad signature', 'invalid_exact_evm_signature', () =>
      signAuthorization(payer, challenge.accepts[0], { signer: privateKeyToAccount(generatePrivateKey()) })],
    ['insufficient balance', 'invalid_exact_evm_insufficient_balance', () =>
      signAuthorization(privateKeyToAccount(generatePrivateKey()), challenge.accepts[0])],
  ];

  for (const [name, reason, build] of cases) {
    it(`${name} -> 402 ${reason}`, async () => {
      const payload = await build();
      const from = (payload.payload as { authorization: { from: `0x${string}` } }).authorization.from;
      const before = await balanceOf(app, from);
      expect(await pay(payload)).toEqual({ status: 402, error: reason });
      expect(await balanceOf(app, from)).toBe(before);
    });
  }

  it('a payment for another asset than the challenge names does not match it', async () => {
    const other = { ...challenge.accepts[0], asset: randomAddress() };
    expect(await pay(await signAuthorization(payer, other))).toEqual({ status: 402, error: 'no_matching_payment_requirements' });
  });
});
