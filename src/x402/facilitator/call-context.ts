// Per-call state the SDK cannot carry for us: the signer is shared by concurrent verifies and
// settles, so it finds "which settlement is this?" through AsyncLocalStorage.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Hash, TransactionReceipt } from 'viem';
import type { SettlementKey, SettlementLedger } from './ledger.js';

export interface SettleAttempt {
  key: SettlementKey;
  /** The payer's signature: the SDK's pending-store key for this settlement. */
  signature: string;
  ledger: SettlementLedger;
  /** The claim this attempt holds: it sends only while the row still names it. */
  claimToken: string;
  /** performance.now() before which no takeover can have happened (the ledger is not asked until then). */
  surelyOwnedUntil: number;
  /** Gas limit to use instead of estimating (capped at the ceiling): the payment was just simulated successfully. */
  gasLimit?: bigint;
  /** Set as soon as the relayer has (possibly) sent the transaction. */
  txHash?: Hash;
  /** The hash is in the ledger. */
  recorded: boolean;
  /** The send's answer was lost: the transaction may or may not exist. */
  uncertain: boolean;
  receipt?: TransactionReceipt;
  /** What interrupted the attempt between send and record (the test seam's simulated crash). */
  crash?: unknown;
  /** The route of the request that asked for this settle (the gas metric's label); none for a background loop. */
  route?: string;
  /** Sent in a transaction of its own, never in a batch (execute.ts: a call a batch starved, sent again). */
  alone?: boolean;
}

export interface CallContext {
  /** A chain read that got no answer (the SDK swallows some of these and reports a wrong reason). */
  rpcFailure?: unknown;
  /** The node refused the relayer's transaction (gas funds, fees, nonce): our problem, not the payer's. */
  sendFailure?: unknown;
  /** The send was refused before sending: it needs more gas than the ceiling. */
  gasRefusal?: unknown;
  /** The settle's claim was taken over before it sent anything: its outcome is the new owner's to write. */
  claimLost?: boolean;
  /** eth_getCode answers for this call: the SDK asks twice for the payer. */
  codes: Map<string, Promise<`0x${string}` | undefined>>;
  settle?: SettleAttempt;
}

const storage = new AsyncLocalStorage<CallContext>();

export const newCallContext = (settle?: SettleAttempt): CallContext => ({ codes: new Map(), settle });

export const runInCall = <T>(ctx: CallContext, fn: () => Promise<T>): Promise<T> => storage.run(ctx, fn);

export const currentCall = (): CallContext | undefined => storage.getStore();
