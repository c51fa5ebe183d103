// A metered endpoint over `upto`: the challenge asks for a Permit2 permit of at most the resource's price, the
// facilitator verifies it, and the settle takes only what the request used. Like charge.ts, each payment is recorded
// (x402_paid_requests, keyed by Permit2's own replay domain: network, Permit2, payer, nonce) before its settle, so a
// permit buys one response and the payer's retry after a lost answer gets that same answer. The amount used is a
// function of the record (`use(maximum, recordId)`), so a settle retried under the record asks for the same amount.
// The seller can take at most the signed maximum (the proxy enforces it); what it took is the settle's `amount`.
// `use` may be asynchronous and may do the work itself (a paid chat runs its turn there, once per permit, and keeps
// what it used by the permit's key: a settle retried under a new record, after one was dropped, asks the same). A use
// of 0 sends nothing: the record is settled with `amount: "0"`, so the permit buys nothing more here.
import { randomUUID } from 'node:crypto';
import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from '@x402/core/types';
import type { FastifyRequest } from 'fastify';
import { getAddress, isAddress } from 'viem';
import { crashPoint } from '../../platform/crash-points.js';
import { paymentIdOf } from '../facilitator/payment-id.js';
import { parsePermit2, permit2PayloadHash } from '../facilitator/permit2/payment.js';
import { Reason } from '../facilitator/reasons.js';
import type { PaidRequestRow } from '../tables.js';
import type { PaidRequestKey } from './paid-requests.js';
import type { ChargeDeps } from './charge.js';
import { NO_MATCH } from './charge.js';
import { FacilitatorUnavailableError, SettlementUnknownError } from './errors.js';
import type { PaymentSteps, PricedResource } from './payment-steps.js';

export type UsageResult =
  | { paid: true; requirements: PaymentRequirements; settlement: SettleResponse; payer: string; used: string; key: PaidRequestKey }
  | { paid: false; paymentRequired: PaymentRequired; settlement?: SettleResponse };

/** What a request used, at most `maximum`; the same for the same record (and, where it keeps it, the same permit). */
export type Usage = (maximum: bigint, recordId: string, key: PaidRequestKey) => bigint | Promise<bigint>;

type Key = PaidRequestKey;

export async function chargeUsage(x402: PaymentSteps, deps: ChargeDeps, request: FastifyRequest, resource: PricedResource, use: Usage): Promise<UsageResult> {
  const payload = x402.readPayment(request);
  const challenge = await uptoChallenge(x402, resource, payload);
  if (!payload) return { paid: false, paymentRequired: challenge };
  const refuse = (reason: string, settlement?: SettleResponse): UsageResult => ({ paid: false, paymentRequired: { ...challenge, error: reason }, ...(settlement ? { settlement } : {}) });
  const requirements = x402.match(challenge, payload);
  if (!requirements) return refuse(NO_MATCH);
  const parsed = parsePermit2(requirements.network, payload, requirements);
  const id = paymentIdOf(payload);
  if (!parsed.ok) return refuse(parsed.reason);
  if (!id.ok) return refuse(Reason.invalidPayload);
  const key: Key = parsed.key;
  const payloadHash = permit2PayloadHash(key, requirements, parsed.payment);
  const purchase = { key, payloadHash, clientPaymentId: id.id, resource: resource.url };

  // Recorded already: the same payment gets its answer again (or its settle retried); another payload reusing the nonce is refused.
  const known = await deps.purchases.find(key);
  if (known) return again(x402, deps, known, purchase, payload, requirements, use, refuse);
  const verified = await x402.verify(payload, requirements);
  if (verified.kind === 'unavailable') throw new FacilitatorUnavailableError(verified.message);
  if (verified.kind === 'invalid') {
    const raced = await deps.purchases.find(key);
    return raced ? again(x402, deps, raced, purchase, payload, requirements, use, refuse) : refuse(verified.reason);
  }
  crashPoint('x402.after-verify');
  const opened = await deps.purchases.open({ ...key, resource: purchase.resource, payloadHash, clientPaymentId: id.id, recordId: randomUUID() });
  if (!opened) return again(x402, deps, (await deps.purchases.find(key))!, purchase, payload, requirements, use, refuse);
  return settleUse(x402, deps, opened, key, payload, requirements, use, refuse, true);
}

type Refuse = (reason: string, settlement?: SettleResponse) => UsageResult;
type Purchase = { key: Key; payloadHash: string; clientPaymentId: string | null; resource: string };

async function again(x402: PaymentSteps, deps: ChargeDeps, row: PaidRequestRow, p: Purchase, payload: PaymentPayload, requirements: PaymentRequirements, use: Usage, refuse: Refuse): Promise<UsageResult> {
  const same = row.payloadHash === p.payloadHash && row.resource === p.resource && (row.clientPaymentId === null || row.clientPaymentId === p.clientPaymentId);
  if (!same) return refuse(Reason.nonceAlreadyUsed);
  if (row.status === 'settled') {
    const settlement = row.settlement as SettleResponse;
    return { paid: true, requirements, settlement, payer: p.key.payer, used: String(settlement.amount ?? (await use(BigInt(requirements.amount), row.recordId, p.key))), key: p.key };
  }
  return settleUse(x402, deps, row, p.key, payload, requirements, use, refuse, false);
}

/** Settles the record's use under its own payment-identifier: a retry gets the facilitator's first answer back. */
async function settleUse(x402: PaymentSteps, deps: ChargeDeps, row: PaidRequestRow, key: Key, payload: PaymentPayload, requirements: PaymentRequirements, use: Usage, refuse: Refuse, fresh: boolean): Promise<UsageResult> {
  const maximum = BigInt(requirements.amount);
  const used = await use(maximum, row.recordId, key);
  if (used < 0n || used > maximum) throw new Error(`usage ${used} is outside 0..${maximum}`);
  if (used === 0n) return served(deps, row, key, requirements, { success: true, transaction: '', network: requirements.network, payer: key.payer, amount: '0' }, used);
  const settled = await x402.settle(payload, { ...requirements, amount: used.toString() }, `x402-metered:${row.recordId}`);
  crashPoint('x402.after-settle');
  switch (settled.kind) {
    case 'unavailable':
      if (fresh) await deps.purchases.drop(key);
      throw new FacilitatorUnavailableError(settled.message);
    case 'unknown':
      throw new SettlementUnknownError(settled.message, settled.transaction ?? '');
    case 'failed':
      if (fresh) await deps.purchases.drop(key);
      return refuse(settled.reason, settled.response);
    case 'settled':
      return served(deps, row, key, requirements, settled.response, used);
  }
}

/** Records the settlement; whoever moved the record serves, a racer gets the recorded result. */
async function served(deps: ChargeDeps, row: PaidRequestRow, key: Key, requirements: PaymentRequirements, response: SettleResponse, used: bigint): Promise<UsageResult> {
  let settlement = response;
  if (!(await deps.purchases.settle(key, settlement))) {
    const current = await deps.purchases.find(key);
    if (current?.status === 'settled' && current.recordId === row.recordId) settlement = current.settlement as SettleResponse;
  }
  return { paid: true, requirements, settlement, payer: key.payer, used: used.toString(), key };
}

/**
 * The `upto` challenge: Permit2, and the relayer the permit must name (only it may send the settle). The facilitator
 * lists its signers; a payment that names one of them is matched against a challenge naming that one.
 */
async function uptoChallenge(x402: PaymentSteps, resource: PricedResource, payload: PaymentPayload | null): Promise<PaymentRequired> {
  const supported = await x402.facilitator().getSupported();
  const signers = (supported.signers?.[x402.network] ?? supported.signers?.['eip155:*'] ?? []).filter((a) => isAddress(a)).map((a) => getAddress(a));
  if (signers.length === 0) throw new FacilitatorUnavailableError('the facilitator names no signer for upto');
  const named = (payload?.accepted?.extra as { facilitatorAddress?: unknown } | undefined)?.facilitatorAddress;
  const facilitatorAddress = typeof named === 'string' && isAddress(named) && signers.includes(getAddress(named)) ? getAddress(named) : signers[0]!;
  const base = x402.paymentRequired(resource, 'Payment required');
  const [exact] = base.accepts;
  return { ...base, accepts: [{ ...exact!, scheme: 'upto', extra: { ...exact!.extra, assetTransferMethod: 'permit2', facilitatorAddress } }] };
}
