// The facilitator's answers, one owner for every scheme's path (EIP-3009, Permit2, batch-settlement): a refusal,
// a settle failure, a success for a ledger row, and the one rule for chain reads before anything is sent (a read
// that got no answer means nothing was sent: ChainUnavailableError, 503).
import type { SettleResponse, VerifyResponse } from '@x402/core/types';
import type { Hash } from 'viem';
import { ChainUnavailableError, isTransportError } from '../../chain/errors.js';
import type { SettlementRow } from '../tables.js';
import { PERMIT2_NONCE_USED } from './permit2/chain.js';
import { Reason } from './reasons.js';

export function failure(network: string, reason: string, message: string, payer?: string, transaction: string = ''): SettleResponse {
  return { success: false, errorReason: reason, errorMessage: message, transaction: transaction as Hash | '', network: network as `${string}:${string}`, payer };
}

export const invalid = (reason: string, message: string, payer?: string): VerifyResponse => ({ isValid: false, invalidReason: reason, invalidMessage: message, payer });

export const idConflict = (network: string, payer: string) => failure(network, Reason.paymentIdentifierConflict, 'this payment-identifier id was used with another payment payload', payer);

/** A success for this row by `transaction`: upto and batch-settlement deposits name the amount they moved, as the SDK's settles do. */
export function settledBy(row: SettlementRow, transaction: Hash): SettleResponse {
  const answer: SettleResponse = { success: true, transaction, network: row.network as `${string}:${string}`, payer: row.payer };
  return row.kind === 'permit2-upto' || row.kind === 'batch-deposit' ? { ...answer, amount: row.amount } : answer;
}

/** A chain read before anything is sent: no answer from the RPC is ChainUnavailableError (nothing was sent; retry). */
export async function chainReads<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    throw isTransportError(error) ? new ChainUnavailableError(error) : error;
  }
}

/** "Already used" in the words of the row's kind (the SDK's codes: a spent Permit2 nonce, a claimed voucher increment). */
export function nonceUsedReason(row: Pick<SettlementRow, 'kind'>): string {
  if (row.kind === 'permit2-exact' || row.kind === 'permit2-upto') return PERMIT2_NONCE_USED;
  if (row.kind === 'batch-claim') return 'invalid_batch_settlement_evm_cumulative_below_claimed';
  if (row.kind === 'batch-refund') return 'invalid_batch_settlement_evm_refund_payload';
  return Reason.nonceAlreadyUsed; // EIP-3009: exact payments and batch-settlement deposits
}
