// The judge: what a settle really did, by the chain's records, never by the sender's word (not even the SDK's
// `success`). A settle's own receipt is judged by this row's paired events (verdicts.ts: the authorization's
// AuthorizationUsed and its Transfer, a Permit2 settlement event, a channel's own event); a settle that did not pay
// may still have been paid by another transaction (a front-run); a call that failed inside a Multicall3 batch is
// asked why; and an open row nobody is working on is resolved from the chain alone (reconcileFromChain).
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import type { Address, Hash, PublicClient, TransactionReceipt } from 'viem';
import type { Logger } from 'pino';
import type { BlockClock } from '../../chain/block-clock.js';
import { MULTICALL3_ADDRESS } from '../../chain/multicall3.js';
import type { SettlementRow } from '../tables.js';
import { failure, settledBy } from './answers.js';
import type { SettleAttempt } from './call-context.js';
import { keyOf, type SettlementKey, type SettlementLedger } from './ledger.js';
import { hasCode } from './payer-code.js';
import { Reason } from './reasons.js';
import { judgeRowReceipt, settlementVerdict } from './verdicts.js';

/** What the judge reads: the chain, the batcher's count of calls per transaction, the verify for a reason. */
export interface JudgePorts {
  client: PublicClient;
  blockTime: BlockClock;
  batcher: { callsIn(hash: Hash): number };
  /** Told the gas each mined settlement used (its share of a batch). */
  observer: { gasSpent?(gas: bigint, outcome: 'settled' | 'failed', route?: string): void } | null;
  /** The SDK's exact scheme verify (verify.ts): why a call failed inside a batch. */
  schemeVerify(key: SettlementKey, payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
}

/**
 * A sent settle's answer as the chain has it: only this row's paired transfer pays (the SDK's own success is not
 * trusted alone), and a settle that did not pay is paid after all when another transaction executed it first.
 * `transferLogIndex`: the paying transfer's log, stored with the row.
 */
export async function judgeSent(
  ports: JudgePorts,
  row: SettlementRow,
  attempt: SettleAttempt,
  sent: SettleResponse,
  payload: PaymentPayload,
  requirements: PaymentRequirements,
): Promise<Judged> {
  let result = sent;
  let transferLogIndex: number | undefined;
  if (attempt.txHash && attempt.receipt) {
    const verdict = judgeRowReceipt(row, attempt.receipt);
    result = verdict.ok ? settledBy(row, attempt.txHash) : failure(row.network, verdict.reason, verdict.message, row.payer, attempt.txHash);
    if (verdict.ok) transferLogIndex = verdict.logIndex;
  } else if (result.success) {
    result = failure(row.network, Reason.transferEventMismatch, 'no receipt to judge the settlement by', row.payer, result.transaction);
  }
  if (attempt.receipt) ports.observer?.gasSpent?.(attempt.receipt.gasUsed / BigInt(ports.batcher.callsIn(attempt.receipt.transactionHash)), result.success ? 'settled' : 'failed', attempt.route);
  if (!result.success) {
    // Another transaction may have executed the authorization first (a front-run): that pays too.
    const verdict = await settlementVerdict(ports.client, { ...row, txHash: attempt.txHash ?? (result.transaction || null) }, ports.blockTime).catch(() => null);
    if (verdict?.kind === 'settled') {
      result = settledBy(row, verdict.txHash);
      transferLogIndex = verdict.logIndex;
    } else if (attempt.receipt && isBatch(attempt.receipt)) {
      return batchCallFailure(ports, row, payload, requirements, attempt.txHash!);
    }
  }
  return { response: result, transferLogIndex };
}

/** The judge's word on a sent settle. */
export interface Judged {
  response: SettleResponse;
  transferLogIndex?: number;
  /** Its call failed inside a batch while the payment still verifies: the batch's fault, not the payment's (execute.ts sends it once more, alone). */
  resendAlone?: boolean;
}

/**
 * This authorization's call failed inside a batch that mined (the others' did not fail with it), and no
 * other transaction used it: nothing moved. The payment is checked again for the reason to give. One that
 * still verifies, from a payer that still has no code, failed for its neighbours' sake: a payer that
 * delegated its account through EIP-7702 after our code check, in the block that carried the batch, makes a
 * token that asks a signer's code first (USDC's order) run that code with the batch's gas, and every later
 * call runs out. A payer that has code now is that payer: refused, never sent again at our gas (one that removed
 * it again is sent alone once like the others: its own ceiling at most). An unanswered read decides nothing new:
 * the call's failure stands, as the reconciler would find it.
 */
async function batchCallFailure(ports: JudgePorts, row: SettlementRow, payload: PaymentPayload, requirements: PaymentRequirements, txHash: Hash): Promise<Judged> {
  const failed = (reason: string, message: string): Judged => ({ response: failure(row.network, reason, message, row.payer, txHash) });
  const code = await ports.client.getCode({ address: row.payer as Address }).then((c) => c ?? '0x', () => null);
  if (code !== null && hasCode(code)) return failed(Reason.payerHasCode, 'the payer has code now: its signature check ran that code inside the settlement batch; nothing moved');
  const verdict = await ports.schemeVerify(keyOf(row), payload, requirements).catch(() => null);
  if (verdict && !verdict.isValid) return failed(verdict.invalidReason ?? Reason.transactionFailed, verdict.invalidMessage ?? 'invalid payment');
  return { ...failed(Reason.transactionFailed, 'its call in the settlement batch failed; nothing moved'), resendAlone: code !== null && verdict !== null };
}

/**
 * Resolves one open row from the chain alone (the receipt of its hash, else the authorization's state and
 * log, pinned to one block) and records the outcome, if the row still carries the hash it was judged by; null
 * while undecidable or when the row moved on. It sends nothing, so a node
 * without a relayer key runs it too (chain-reconciler.ts).
 */
export async function reconcileFromChain(
  deps: { client: PublicClient; ledger: SettlementLedger; blockTime: BlockClock; log: Logger },
  row: SettlementRow,
): Promise<SettlementRow | null> {
  const verdict = await settlementVerdict(deps.client, row, deps.blockTime);
  if (verdict.kind === 'pending') return null;
  const response = verdict.kind === 'settled' ? settledBy(row, verdict.txHash) : failure(row.network, verdict.reason, verdict.message, row.payer, verdict.txHash ?? '');
  const final = await deps.ledger.finish(keyOf(row), { status: verdict.kind, response, transferLogIndex: verdict.kind === 'settled' ? verdict.logIndex : undefined, readWithTxHash: row.txHash });
  // The row moved on since it was read (reopened or replaced: another hash): judged again from its new state.
  if (final.status === 'claimed' || final.status === 'broadcast') return null;
  deps.log.info({ nonce: row.nonce, payer: row.payer, status: final.status, tx: final.txHash }, 'settlement reconciled from chain');
  return final;
}

/** A Multicall3 transaction: a batch of settlements (batcher.ts), each call judged by its own logs. */
const isBatch = (receipt: TransactionReceipt) => receipt.to?.toLowerCase() === MULTICALL3_ADDRESS.toLowerCase();
