// Request-level checks before the SDK scheme runs: what this facilitator supports at all (x402 v2,
// exact, our network, registered assets, EIP-3009 only), the bounds the request alone decides
// (positive amount, capped timeout: bounds.ts) and the settlement key of the payment.
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { isPermit2Payload } from '@x402/evm';
import { getAddress, isAddress } from 'viem';
import { keccak256Text } from '../../chain/keccak.js';
import { findAsset } from '../../chain/registry.js';
import { eip3009PayloadSchema, type Eip3009Payload } from '../payload.js';
import { requestBounds } from './bounds.js';
import type { SettlementKey } from './ledger.js';
import { Reason } from './reasons.js';

export type Precheck =
  | { ok: true; eip3009: Eip3009Payload; key: SettlementKey }
  | { ok: false; reason: string; message: string; payer?: string };

export function precheck(network: string, payload: PaymentPayload, requirements: PaymentRequirements): Precheck {
  const fail = (reason: string, message: string): Precheck => ({ ok: false, reason, message, payer: payerOf(payload) });
  if (payload.x402Version !== 2) return fail(Reason.invalidX402Version, `x402Version ${payload.x402Version} is not supported; use 2`);
  if (requirements.scheme !== 'exact') return fail(Reason.unsupportedScheme, `scheme ${requirements.scheme} is not supported`);
  if (requirements.network !== network) return fail(Reason.invalidNetwork, `network ${requirements.network} is not supported; use ${network}`);
  if (!findAsset(network, requirements.asset)) {
    return fail(Reason.invalidPaymentRequirements, `asset ${requirements.asset} is not supported on ${network}`);
  }
  if (!isAddress(requirements.payTo)) return fail(Reason.invalidPaymentRequirements, 'payTo must be an EVM address');
  // We only settle EIP-3009: Permit2 needs contracts this chain does not have.
  if (isPermit2Payload(payload.payload as never)) return fail(Reason.unsupportedPayloadType, 'Permit2 payloads are not supported; sign EIP-3009');
  const parsed = eip3009PayloadSchema.safeParse(payload.payload);
  if (!parsed.success) return fail(Reason.invalidPayload, 'payload must be an EIP-3009 authorization with a signature');
  const eip3009 = parsed.data;
  const outOfBounds = requestBounds(requirements, eip3009);
  if (outOfBounds) return fail(outOfBounds.reason, outOfBounds.message);
  const auth = eip3009.authorization;
  const key: SettlementKey = {
    network,
    asset: getAddress(requirements.asset),
    payer: getAddress(auth.from),
    nonce: auth.nonce.toLowerCase(),
  };
  return { ok: true, eip3009, key };
}

/** Tells a retry of this payment from another payload reusing its nonce (only settle needs it). */
export function payloadHashOf(key: SettlementKey, requirements: PaymentRequirements, eip3009: Eip3009Payload): string {
  const auth = eip3009.authorization;
  const terms = [key.network, key.asset, getAddress(requirements.payTo), requirements.amount];
  const signed = [auth.from, auth.to, auth.value, auth.validAfter, auth.validBefore, auth.nonce, eip3009.signature];
  return keccak256Text(JSON.stringify([...terms, ...signed].map((v) => v.toLowerCase())));
}

function payerOf(payload: PaymentPayload): string | undefined {
  const from = (payload.payload as { authorization?: { from?: unknown } } | undefined)?.authorization?.from;
  return typeof from === 'string' ? from : undefined;
}
