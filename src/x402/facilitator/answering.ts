// Who is told what about a settlement row: `success: true` is said once per authorization, ever, because
// resource servers serve on that word alone. The claiming settle answers its own outcome; every other call
// (a retry, a copy, a call on another node) waits for the row's outcome and gets the success only while nobody
// has had it and its owner is gone, else `nonce_already_used` naming the transaction. (answers.ts builds the
// response shapes; this file decides which one each caller gets.)
import type { SettleResponse } from '@x402/core/types';
import type { Hash } from 'viem';
import { isTransportError } from '../../chain/errors.js';
import { crashPoint } from '../../platform/crash-points.js';
import type { SettlementRow } from '../tables.js';
import { failure, nonceUsedReason } from './answers.js';
import { keyOf, type Answerer, type SettlementLedger } from './ledger.js';
import { Reason } from './reasons.js';

/** What the answers need: the ledger, and the two ways an open row another call owns gets decided. */
export interface AnsweringPorts {
  ledger: SettlementLedger;
  batcher: { isBatch(hash: Hash): boolean };
  /** How long a retry waits for a settlement another call or node is running before answering pending. */
  joinWaitMs: number;
  /** How long a claiming settle may still be answering (FacilitatorOptions.ownerLeaseMs). */
  ownerLeaseMs: number;
  /** Resolves an open row from the chain (judge.ts); null while undecidable. */
  reconcile(row: SettlementRow): Promise<SettlementRow | null>;
  /** Takes over and executes a claim whose node died before sending (execute.ts); whether it did. */
  executeOrphan(row: SettlementRow): Promise<boolean>;
}

export class SettleAnswers {
  constructor(private readonly ports: AnsweringPorts) {}

  /**
   * Another call owns (or owned) this payment: wait for its outcome, resolving it from the chain if
   * need be. A copy gets `success: true` only if nobody ever got it and the owner is gone (it
   * answered pending, or its node died).
   */
  async resume(row: SettlementRow, call: { payloadHash: string; paymentId: string | null }): Promise<SettleResponse> {
    if (row.payloadHash !== call.payloadHash) {
      return failure(row.network, nonceUsedReason(row), 'this authorization nonce belongs to another payment', row.payer, row.txHash ?? '');
    }
    const { ledger } = this.ports;
    const deadline = Date.now() + this.ports.joinWaitMs;
    let current: SettlementRow | null = row;
    while (current && (current.status === 'claimed' || current.status === 'broadcast')) {
      if (await this.ports.executeOrphan(current)) {
        current = await ledger.find(keyOf(row));
        continue;
      }
      const final: SettlementRow | null = await this.ports.reconcile(current).catch((error: unknown) => {
        if (isTransportError(error)) return null;
        throw error;
      });
      if (final) current = final;
      else if (Date.now() >= deadline) {
        return failure(row.network, Reason.settlementPending, 'settlement in progress; retry the same settle', row.payer, current.txHash ?? '');
      } else {
        await sleep(200);
        current = await ledger.find(keyOf(row));
      }
    }
    if (!current?.response) throw new Error('settlement row vanished');
    // A retry with the owner's payment-identifier is answered like any other copy: the stored success
    // only while nobody has had it (the owner said pending, or died), else nonce_already_used naming
    // the transaction. Handing it out again would let one payment buy a response per copy.
    return this.#answer(current, { leaseMs: this.ports.ownerLeaseMs, paymentId: call.paymentId });
  }

  /** The claiming settle's answer: its outcome, unless a front-run or a stranger's retry was answered first. */
  async finishOwned(row: SettlementRow, response: SettleResponse, transferLogIndex?: number, answer: 'owner' | 'nobody' = 'owner'): Promise<SettleResponse> {
    const final = await this.ports.ledger.finish(keyOf(row), { status: response.success ? 'settled' : 'failed', response, transferLogIndex });
    if (final.txHash && this.ports.batcher.isBatch(final.txHash as Hash)) crashPoint('batch.after-some-rows');
    crashPoint('settle.after-commit');
    if (answer === 'nobody') {
      await this.ports.ledger.disown(keyOf(row), row.claimToken);
      return final.response as SettleResponse;
    }
    return this.#answer(final, { claimToken: row.claimToken });
  }

  /** A final row's answer to one caller: failures as stored; the one success to whoever wins it. */
  async #answer(row: SettlementRow, by: Answerer): Promise<SettleResponse> {
    const response = row.response as SettleResponse;
    if (row.status !== 'settled' || (await this.ports.ledger.answerSuccess(keyOf(row), by))) return response;
    return failure(row.network, nonceUsedReason(row), `the authorization was already settled in ${response.transaction} and that settlement was answered`, row.payer, response.transaction);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
