// What every batch-settlement operation (deposits.ts, claims.ts, sweeps.ts, refunds.ts) shares: the parts the
// facilitator lends the engine, the engine's own verify and settle (an operation calls back into them), the SDK's
// reason codes, and the small steps more than one operation takes (payers with code refused, one settle per key in
// this process, the channel's state on a success, the payload hash a retry is recognised by).
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import { getAddress, type Hex } from 'viem';
import { keccak256Text } from '../../../chain/keccak.js';
import { chainReads } from '../answers.js';
import { keyString, type SettlementKey } from '../ledger.js';
import type { EnginePorts } from '../engine-ports.js';
import { readChannel, snapshotOf } from './chain.js';
import type { Caller } from '../../../platform/request-context.js';

/** What the facilitator lends this engine (engine-ports.ts), with the batch ceilings. */
export interface BatchPorts extends EnginePorts {
  /** FACILITATOR_MAX_BATCH_SETTLEMENT_GAS: a deposit, a sweep, a refund (plus its claims' share). */
  maxGas: bigint;
  /** FACILITATOR_MAX_CLAIM_GAS_PER_VOUCHER: a claim's ceiling is this per voucher plus CLAIM_BASE_GAS. */
  claimGasPerVoucher: bigint;
}

/** The engine's own steps (settlements.ts) an operation calls back: its whole verify, and its settle (a join re-enters it). */
export interface BatchEngine {
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  settle(payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller): Promise<SettleResponse>;
}

export const FRONT_RUN_LOOKBACK_BLOCKS = 10_000n;

export const Err = {
  payloadType: 'invalid_batch_settlement_evm_payload_type',
  claimPayload: 'invalid_batch_settlement_evm_claim_payload',
  depositPayload: 'invalid_batch_settlement_evm_deposit_payload',
  refundPayload: 'invalid_batch_settlement_evm_refund_payload',
  belowClaimed: 'invalid_batch_settlement_evm_cumulative_below_claimed',
  exceedsBalance: 'invalid_batch_settlement_evm_cumulative_exceeds_balance',
  voucherSignature: 'invalid_batch_settlement_evm_voucher_signature',
  authorizerNotConfigured: 'invalid_batch_settlement_evm_authorizer_not_configured',
  claimSignature: 'invalid_batch_settlement_evm_claim_signature',
  nothingToSettle: 'invalid_batch_settlement_evm_nothing_to_settle',
  refundNoBalance: 'invalid_batch_settlement_evm_refund_no_balance',
  claimFailed: 'invalid_batch_settlement_evm_claim_transaction_failed',
  depositFailed: 'invalid_batch_settlement_evm_deposit_transaction_failed',
  validBefore: 'invalid_batch_settlement_evm_payload_authorization_valid_before',
  validAfter: 'invalid_batch_settlement_evm_payload_authorization_valid_after',
} as const;

export async function refusedForCode(ports: BatchPorts, address: string): Promise<boolean> {
  if (ports.contractPayers === 'allow') return false;
  return chainReads(() => ports.payerCode.hasCode(getAddress(address)));
}

/** One settle per key in this process at a time (others join it, then answer from the row). */
export async function exclusive(
  ports: BatchPorts,
  engine: BatchEngine,
  key: SettlementKey,
  payload: PaymentPayload,
  requirements: PaymentRequirements,
  caller: Caller | undefined,
  run: () => Promise<SettleResponse>,
): Promise<SettleResponse> {
  const id = keyString(key);
  const running = ports.inflight.get(id);
  if (running) {
    await running.catch(() => undefined);
    return engine.settle(payload, requirements, caller);
  }
  const settling = run();
  ports.inflight.set(id, settling);
  try {
    return await settling;
  } finally {
    ports.inflight.delete(id);
  }
}

/** A successful deposit or refund answer carries the channel's state after it (what the SDK's server mirrors). */
export async function withChannel(ports: BatchPorts, response: SettleResponse, channelId: Hex): Promise<SettleResponse> {
  if (!response.success) return response;
  const state = await readChannel(ports.client, channelId).catch(() => null);
  return state ? { ...response, extra: { ...(response.extra ?? {}), channelState: snapshotOf(channelId, state) } } : response;
}

export function payloadHash(key: SettlementKey, requirements: PaymentRequirements, payload: unknown): string {
  return keccak256Text(JSON.stringify([keyString(key), getAddress(requirements.payTo), requirements.amount, payload]));
}
