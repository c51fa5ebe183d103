// The whole x402 flow of one of our own simple paid endpoints (ping, demo): challenge when unpaid, then
// verify and settle, with each payment recorded (x402_paid_requests) before it is settled. A payment
// buys one response, and the payer's retry after a lost answer gets that same result again rather than
// `nonce_already_used` ("do not pay again", and no resource). Order matters: the record is read before
// verify (a settled payment no longer verifies), written before settle (the one step that moves money).
import { randomUUID } from 'node:crypto';
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import type { FastifyRequest } from 'fastify';
import { getAddress, type PublicClient } from 'viem';
import { authorizationOutcome } from '../../chain/payment-check.js';
import type { PaymentUses } from '../../chain/payment-uses.js';
import { crashPoint } from '../../platform/crash-points.js';
import { paymentIdOf } from '../facilitator/payment-id.js';
import { payloadHashOf } from '../facilitator/precheck.js';
import { Reason } from '../facilitator/reasons.js';
import { eip3009PayloadSchema } from '../payload.js';
import type { PaidRequests } from './paid-requests.js';
import type { PaidRequestRow } from '../tables.js';
import { FacilitatorUnavailableError, SettlementUnknownError } from './errors.js';
import type { ChargeResult, PaymentSteps, PricedResource } from './payment-steps.js';

/** How far back a retry looks for the transaction that executed its payment. */
const LOOKBACK_BLOCKS = 10_000n;

export interface ChargeDeps {
  purchases: PaidRequests;
  client: PublicClient;
  uses: PaymentUses;
}

/** One payment as our endpoints record it. */
interface Purchase {
  key: { network: string; asset: string; payer: string; nonce: string };
  payloadHash: string;
  clientPaymentId: string | null;
  resource: string;
  payTo: string;
  amount: string;
  validBefore: bigint;
}

type Refuse = (reason: string) => ChargeResult;

export async function chargeOnce(x402: PaymentSteps, deps: ChargeDeps, request: FastifyRequest, resource: PricedResource): Promise<ChargeResult> {
  const challenge = x402.paymentRequired(resource, 'Payment required');
  const payload = x402.readPayment(request);
  if (!payload) return { paid: false, paymentRequired: challenge };
  const requirements = x402.match(challenge, payload);
  const refuse: Refuse = (reason) => ({ paid: false, paymentRequired: { ...challenge, error: reason } });
  if (!requirements) return refuse(NO_MATCH);
  const purchase = purchaseOf(payload, requirements, resource.url);
  // Not an EIP-3009 payment we could record: the facilitator's verify names what is wrong with it.
  if (!purchase) return refuseInvalid(x402, payload, requirements, refuse);
  const known = await deps.purchases.find(purchase.key);
  if (known) return again(x402, deps, known, purchase, payload, requirements, refuse);

  const verified = await x402.verify(payload, requirements);
  if (verified.kind === 'unavailable') throw new FacilitatorUnavailableError(verified.message);
  if (verified.kind === 'invalid') {
    // A concurrent request of the same payment may have recorded it while we verified.
    const raced = await deps.purchases.find(purchase.key);
    return raced ? again(x402, deps, raced, purchase, payload, requirements, refuse) : refuse(verified.reason);
  }
  crashPoint('x402.after-verify');
  const opened = await deps.purchases.open({ ...purchase.key, resource: purchase.resource, payloadHash: purchase.payloadHash, clientPaymentId: purchase.clientPaymentId, recordId: randomUUID() });
  if (!opened) return again(x402, deps, (await deps.purchases.find(purchase.key))!, purchase, payload, requirements, refuse);
  return settleRecorded(x402, deps, opened, purchase, payload, requirements, refuse, true);
}

/**
 * The payment is recorded already. The same payment (same payload and resource, and the client's own
 * payment-identifier when the first request carried one) gets the first result again; anything else
 * reusing its nonce is refused. A payment whose outcome was unknown is settled again under its record.
 */
async function again(x402: PaymentSteps, deps: ChargeDeps, row: PaidRequestRow, purchase: Purchase, payload: PaymentPayload, requirements: PaymentRequirements, refuse: Refuse): Promise<ChargeResult> {
  const same = row.payloadHash === purchase.payloadHash && row.resource === purchase.resource && (row.clientPaymentId === null || row.clientPaymentId === purchase.clientPaymentId);
  if (!same) return refuse(Reason.nonceAlreadyUsed);
  if (row.status === 'settled') return { paid: true, payload, requirements, settlement: row.settlement as SettleResponse, payer: purchase.key.payer };
  return settleRecorded(x402, deps, row, purchase, payload, requirements, refuse, false);
}

/**
 * Settles a recorded payment under its record's payment-identifier. A retry (`fresh` false) asks the chain
 * first: the earlier attempt may have paid, and only the transfer claimed for this record counts.
 */
async function settleRecorded(
  x402: PaymentSteps,
  deps: ChargeDeps,
  row: PaidRequestRow,
  purchase: Purchase,
  payload: PaymentPayload,
  requirements: PaymentRequirements,
  refuse: Refuse,
  fresh: boolean,
): Promise<ChargeResult> {
  const record = `x402-charge:${row.recordId}`;
  if (!fresh) {
    const expected = { asset: purchase.key.asset, payer: purchase.key.payer, nonce: purchase.key.nonce, payTo: purchase.payTo, amount: purchase.amount };
    const outcome = await authorizationOutcome(deps.client, expected, purchase.validBefore, LOOKBACK_BLOCKS, 0);
    if (outcome.kind === 'paid') {
      if (!(await x402.claimPayment(record, expected, outcome))) return refuse(Reason.nonceAlreadyUsed);
      return served(deps, row, purchase, payload, requirements, { success: true, transaction: outcome.transactionHash, network: requirements.network, payer: purchase.key.payer });
    }
    if (outcome.kind === 'spent') return refuse(Reason.nonceAlreadyUsed);
    if (outcome.kind === 'dead') {
      await deps.purchases.drop(purchase.key);
      return refuse(Reason.validBefore);
    }
  }
  const settled = await x402.settle(payload, requirements, record);
  crashPoint('x402.after-settle');
  switch (settled.kind) {
    case 'unavailable':
      // Nothing was sent by this call; a record from an earlier unknown attempt stays.
      if (fresh) await deps.purchases.drop(purchase.key);
      throw new FacilitatorUnavailableError(settled.message);
    case 'unknown':
      throw new SettlementUnknownError(settled.message, settled.transaction ?? '');
    case 'failed':
      // Definitive, nothing moved for this call: the authorization may be sent again (e.g. once funded).
      if (fresh) await deps.purchases.drop(purchase.key);
      return { ...(refuse(settled.reason) as Extract<ChargeResult, { paid: false }>), settlement: settled.response };
    case 'settled':
      return served(deps, row, purchase, payload, requirements, settled.response);
  }
}

/** Records the settlement; whoever moved the record serves, a racer gets the recorded result. */
async function served(deps: ChargeDeps, row: PaidRequestRow, purchase: Purchase, payload: PaymentPayload, requirements: PaymentRequirements, settlement: SettleResponse): Promise<ChargeResult> {
  if (!(await deps.purchases.settle(purchase.key, settlement))) {
    const current = await deps.purchases.find(purchase.key);
    if (current?.status === 'settled' && current.recordId === row.recordId) settlement = current.settlement as SettleResponse;
  }
  return { paid: true, payload, requirements, settlement, payer: purchase.key.payer };
}

async function refuseInvalid(x402: PaymentSteps, payload: PaymentPayload, requirements: PaymentRequirements, refuse: Refuse): Promise<ChargeResult> {
  const verified = await x402.verify(payload, requirements);
  if (verified.kind === 'unavailable') throw new FacilitatorUnavailableError(verified.message);
  return refuse(verified.kind === 'invalid' ? verified.reason : Reason.invalidPayload);
}

function purchaseOf(payload: PaymentPayload, requirements: PaymentRequirements, resource: string): Purchase | null {
  const parsed = eip3009PayloadSchema.safeParse(payload.payload);
  const id = paymentIdOf(payload);
  if (!parsed.success || !id.ok) return null;
  const auth = parsed.data.authorization;
  const key = { network: requirements.network, asset: getAddress(requirements.asset), payer: getAddress(auth.from), nonce: auth.nonce.toLowerCase() };
  return {
    key,
    payloadHash: payloadHashOf(key, requirements, parsed.data),
    clientPaymentId: id.id,
    resource,
    payTo: getAddress(requirements.payTo),
    amount: requirements.amount,
    validBefore: BigInt(auth.validBefore),
  };
}

export const NO_MATCH = 'no_matching_payment_requirements';
