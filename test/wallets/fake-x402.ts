import type http from 'node:http';
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import type { PaymentRequirements } from '@x402/core/types';
import { verifyTypedData } from 'viem';
import { transferWithAuthorizationTypes } from '../../src/chain/eip3009.js';
import type { Recorded } from './helpers.js';

// A stand-in x402 resource server for tests without a chain: it challenges, checks the EIP-3009
// signature against the signer's address offline, and "settles" with a made-up transaction hash.

export const USDG = '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168';
export const NETWORK = 'eip155:4663';
export const PAY_TO = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

export const requirement = (amount: string, extra: Partial<PaymentRequirements> = {}): PaymentRequirements => ({
  scheme: 'exact',
  network: NETWORK,
  asset: USDG,
  amount,
  payTo: PAY_TO,
  maxTimeoutSeconds: 300,
  extra: { name: 'Global Dollar', version: '1' },
  ...extra,
});

export const maxPayment = (amount: string) => ({ network: NETWORK, asset: USDG, amount });

export function challenge(res: http.ServerResponse, accepts: PaymentRequirements[], error = 'Payment required') {
  const header = encodePaymentRequiredHeader({ x402Version: 2, error, resource: { url: 'http://upstream/paid' }, accepts });
  res.writeHead(402, { 'payment-required': header, 'content-type': 'application/json' }).end('{}');
}

export interface CheckedPayment {
  from: string;
  to: string;
  value: string;
  nonce: string;
  valid: boolean;
  accepted: PaymentRequirements;
}

/** Decodes and checks PAYMENT-SIGNATURE the way a facilitator's verify would (signature only). */
export async function checkPayment(req: Recorded): Promise<CheckedPayment | null> {
  const header = req.headers['payment-signature'];
  if (typeof header !== 'string') return null;
  const payload = decodePaymentSignatureHeader(header);
  const { authorization, signature } = payload.payload as { authorization: Record<string, string>; signature: `0x${string}` };
  const valid = await verifyTypedData({
    address: authorization.from as `0x${string}`,
    domain: { name: 'Global Dollar', version: '1', chainId: 4663, verifyingContract: payload.accepted.asset as `0x${string}` },
    types: transferWithAuthorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message: {
      from: authorization.from as `0x${string}`,
      to: authorization.to as `0x${string}`,
      value: BigInt(authorization.value),
      validAfter: BigInt(authorization.validAfter),
      validBefore: BigInt(authorization.validBefore),
      nonce: authorization.nonce as `0x${string}`,
    },
    signature,
  });
  return { from: authorization.from, to: authorization.to, value: authorization.value, nonce: authorization.nonce, valid, accepted: payload.accepted };
}

export function settled(res: http.ServerResponse, body: unknown, transaction = `0x${'ab'.repeat(32)}`) {
  const receipt = encodePaymentResponseHeader({ success: true, transaction, network: NETWORK, payer: PAY_TO });
  res.writeHead(200, { 'payment-response': receipt, 'content-type': 'application/json' }).end(JSON.stringify(body));
}
