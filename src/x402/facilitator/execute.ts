// The send of a claimed settlement row, whatever its scheme (EIP-3009 here, Permit2 and batch-settlement through
// their own send): the claim's hash reaches the ledger the moment it leaves (the call context carries the attempt
// to the signer), a call that ends without a final answer gives its claim back or disowns it, and whatever was
// sent is judged by the chain (judge.ts) before the owner is answered (answering.ts); a call its batch starved
// (its payment still verifies) is sent once more, alone. Also the takeover of a claim whose node died before
// sending anything.
import type { x402Facilitator } from '@x402/core/facilitator';
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { getAddress, type Hash } from 'viem';
import type { Logger } from 'pino';
import { ChainUnavailableError } from '../../chain/errors.js';
import { crashPoint } from '../../platform/crash-points.js';
import type { Eip3009Payload } from '../payload.js';
import type { SettlementRow } from '../tables.js';
import { failure } from './answers.js';
import { currentCall, newCallContext, runInCall, type SettleAttempt } from './call-context.js';
import { judgeSent, type JudgePorts } from './judge.js';
import { keyOf, type SettlementLedger } from './ledger.js';
import { hasCode } from './payer-code.js';
import { parsedTransferData, transferWithAuthorizationData } from './quick-check.js';
import { ownWords, Reason } from './reasons.js';
import type { FacilitatorSigner } from './signer.js';

/** How a claimed row is sent: when its claim was asked, whether it was just simulated, the route that asked (the gas metric's label). */
export interface ExecuteOptions {
  claimAskedAt: number;
  simulated?: boolean;
  /** The authorization as the settle parsed and simulated it: its transfer's calldata is already encoded (quick-check.ts). */
  eip3009?: Eip3009Payload;
  route?: string;
  /** Kept out of batches: its call failed inside one while its payment still verified (judge.ts). */
  alone?: boolean;
}

/** A settle's request, stored with its claim so a takeover can execute it after the claiming node died. */
export interface SettleRequest {
  payload: PaymentPayload;
  requirements: PaymentRequirements;
}

/** What the send of a claimed row needs: the judge's parts, the senders by kind, and the owner's answer. */
export interface ExecutePorts extends JudgePorts {
  ledger: SettlementLedger;
  signer: FacilitatorSigner;
  log: Logger;
  /** The SDK facilitator: its settle (which re-verifies) for an EIP-3009 row not just simulated. */
  sdk: Pick<x402Facilitator, 'settle'>;
  ownerLeaseMs: number;
  /** FACILITATOR_MAX_SETTLE_GAS: the gas limit of a just-simulated EIP-3009 settle. */
  maxSettleGas: bigint;
  sendPermit2(row: SettlementRow, payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse>;
  sendBatch(row: SettlementRow, payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse>;
  finishOwned(row: SettlementRow, response: SettleResponse, transferLogIndex: number | undefined, answer: 'owner' | 'nobody'): Promise<SettleResponse>;
}

export class SettleExecutor {
  constructor(private readonly ports: ExecutePorts) {}

  /**
   * `claimAskedAt`: when this call asked for its claim (performance.now(), before the statement). A takeover
   * needs the claim's lease lapsed by the database's clock, which started no earlier than that: until half
   * the lease has passed here, the claim is certainly still ours and the send skips asking the ledger.
   */
  async execute(
    row: SettlementRow,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    options: ExecuteOptions,
    answer: 'owner' | 'nobody' = 'owner',
  ): Promise<SettleResponse> {
    const { claimAskedAt, simulated = false, route, eip3009, alone } = options;
    const { ledger, maxSettleGas } = this.ports;
    const key = keyOf(row);
    const release = () => ledger.release(key, row.claimToken);
    const attempt: SettleAttempt = {
      key,
      signature: row.signature,
      ledger,
      claimToken: row.claimToken,
      surelyOwnedUntil: claimAskedAt + this.ports.ownerLeaseMs / 2,
      // Just simulated (an EOA on a registered token: the token's own code, bounded): sent at the ceiling.
      gasLimit: simulated ? maxSettleGas : undefined,
      recorded: false,
      uncertain: false,
      route,
      alone,
    };
    const call = newCallContext(attempt);
    let result: SettleResponse;
    try {
      // Plainly valid (just simulated with a 65-byte signature): sent as is. Anything else: the SDK's settle, which re-verifies.
      result = await runInCall(call, () =>
        simulated
          ? this.#settleSimulated(payload, requirements, maxSettleGas, eip3009)
          : row.kind.startsWith('permit2-')
            ? this.ports.sendPermit2(row, payload, requirements)
            : row.kind.startsWith('batch-')
              ? this.ports.sendBatch(row, payload, requirements)
              : this.ports.sdk.settle(payload, requirements),
      );
      if (!result.success) result = { ...result, errorMessage: ownWords(result.errorReason) };
      crashPoint('settle.after-receipt');
    } catch (error) {
      if (!attempt.txHash) await release();
      else await ledger.disown(key, row.claimToken);
      throw error;
    }
    if (call.gasRefusal && !attempt.txHash) {
      // Refused before sending (it needs more gas than we pay for): nothing moved, nothing to remember.
      await release();
      return failure(row.network, Reason.gasOverCeiling, ownWords(Reason.gasOverCeiling), row.payer);
    }
    if (call.claimLost) {
      // Taken over while this settle stalled before sending: the new owner sends and writes the outcome.
      return failure(row.network, Reason.settlementPending, 'settlement in progress; retry the same settle', row.payer);
    }
    if (attempt.txHash && !attempt.recorded) {
      // The hash never reached the ledger (what a crash right after sending looks like): the row
      // stays open for the reconciler, which finds the transaction through the token's logs.
      throw attempt.crash ?? new Error('settlement broadcast but not recorded');
    }
    if (attempt.uncertain || result.errorReason === Reason.settlementPending) {
      // This call ends without a final answer: the success, when the chain gives it, is the retry's.
      await ledger.disown(key, row.claimToken);
      return failure(row.network, Reason.settlementPending, 'transaction sent; outcome not known yet, retry the same settle', row.payer, attempt.txHash ?? result.transaction);
    }
    if (!attempt.txHash && (call.rpcFailure || call.sendFailure)) {
      // Nothing was sent and the payment is not at fault: free the claim so a retry can settle it.
      await release();
      throw new ChainUnavailableError(call.rpcFailure ?? call.sendFailure);
    }
    const judged = await judgeSent(this.ports, row, attempt, result, payload, requirements);
    if (judged.resendAlone && !alone) {
      // Once, alone: a lone transaction runs only this authorization's transfer, so no neighbour can starve it.
      const asked = performance.now();
      const reopened = await ledger.reopen(key, row.claimToken, attempt.txHash!);
      if (reopened) {
        this.ports.log.warn({ nonce: row.nonce, payer: row.payer, batch: attempt.txHash }, 'settlement call failed inside its batch while the payment still verifies: sending it again, alone');
        return this.execute(reopened, payload, requirements, { ...options, claimAskedAt: asked, alone: true }, answer);
      }
    }
    return this.ports.finishOwned(row, judged.response, judged.transferLogIndex, answer);
  }

  /**
   * A claim whose node died before sending anything would block the payment until validBefore: once its
   * owner's lease has lapsed (database time), it is taken over and executed from the request stored with
   * it. Nobody is answered here; the success waits for the owner's retry (disowned). Sending twice is
   * harmless if the dead node did send after all: the token executes one authorization once.
   */
  async executeOrphan(row: SettlementRow): Promise<boolean> {
    // A batch-settlement claim row is one of several in one transaction: never re-executed alone (reconciled from the chain).
    if (row.status !== 'claimed' || row.txHash || !row.request || row.kind === 'batch-claim') return false;
    const asked = performance.now();
    const taken = await this.ports.ledger.takeOver(keyOf(row), this.ports.ownerLeaseMs, crypto.randomUUID());
    if (!taken) return false;
    const { payload, requirements } = row.request as SettleRequest;
    this.ports.log.info({ nonce: row.nonce, payer: row.payer }, 'settlement claim taken over from a node that died before sending');
    await this.execute(taken, payload, requirements, { claimAskedAt: asked }, 'nobody');
    return true;
  }

  /**
   * The settle of a payment the quick check has just simulated (an EOA's 65-byte signature, every check
   * passed on chain): its transferWithAuthorization goes to the batcher as is, without the SDK's second
   * verify (a JavaScript signature recovery per payment). Answers as the SDK's settle would; execute()
   * judges the receipt by this authorization's own logs either way.
   */
  async #settleSimulated(payload: PaymentPayload, requirements: PaymentRequirements, gas: bigint, parsed?: Eip3009Payload): Promise<SettleResponse> {
    const { signer } = this.ports;
    const eip3009 = parsed ?? (payload.payload as unknown as Eip3009Payload);
    const payer = getAddress(eip3009.authorization.from);
    const network = requirements.network;
    let hash: Hash;
    try {
      // A payer with code checks the signature with its own code, with all the gas a batch forwards: alone.
      const code = await signer.getCode({ address: payer });
      const alone = hasCode(code) || currentCall()?.rpcFailure !== undefined;
      const data = parsed ? parsedTransferData(parsed) : transferWithAuthorizationData(eip3009);
      hash = await signer.sendSettlement({ to: getAddress(requirements.asset), data, gas, payer, alone });
    } catch {
      // execute() tells apart what this was from the call context (taken over, uncertain, nothing sent).
      return failure(network, Reason.transactionFailed, 'settlement transaction not sent', payer);
    }
    let receipt: { status: string };
    try {
      receipt = await signer.waitForTransactionReceipt({ hash });
    } catch (error) {
      return failure(network, Reason.settlementPending, error instanceof Error ? error.message.split('\n')[0]! : 'receipt not seen yet', payer, hash);
    }
    return receipt.status === 'success' ? { success: true, transaction: hash, network, payer } : failure(network, Reason.transactionFailed, 'settlement transaction reverted', payer, hash);
  }
}
