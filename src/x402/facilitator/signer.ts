// The FacilitatorEvmSigner the @x402/evm exact scheme drives. Beyond adapting viem it:
// - captures the settlement tx hash into the ledger the moment a relayer lane sends it, and each
//   replacement's hash when a stuck transaction is re-sent with higher fees;
// - keeps the receipt for our own log checks (Transfer + AuthorizationUsed);
// - never lets eth_getCode reject (the SDK fires one check it may abandon, which would otherwise be
//   an unhandled rejection when the RPC is down) and records the failure instead;
// - sends nothing with a gas limit above the ceiling (gas-ceiling.ts): a payer whose signature check
//   needs more is refused before sending;
// - decodes the token's custom errors into words the SDK's reason mapping recognises.
import type { FacilitatorEvmSigner } from '@x402/evm';
import {
  BaseError,
  concat,
  decodeErrorResult,
  encodeFunctionData,
  isAddressEqual,
  TransactionReceiptNotFoundError,
  type Abi,
  type Address,
  type Hash,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
} from 'viem';
import { eip3009Abi } from '../../chain/eip3009.js';
import { UPTO_PERMIT2_PROXY } from '../../chain/x402-contracts.js';
import { isTransportError } from '../../chain/errors.js';
import { crashPoint } from '../../platform/crash-points.js';
import { currentCall } from './call-context.js';
import type { SettlementBatcher } from './batcher.js';
import type { RelayerPool } from './relayer-pool.js';
import { BroadcastUncertainError } from './sender.js';
import { GasCeilingError, gasWithin } from './gas-ceiling.js';
import type { PayerCode } from './payer-code.js';

export interface SignerHooks {
  /** Test seam: runs before the claim is checked and the transaction sent (a stall here may lose the claim). */
  beforeSend?(): Promise<void> | void;
  /** Test seam: runs after the send returned, before the hash reaches the ledger (a crash here is the worst case). */
  afterBroadcast?(hash: Hash): Promise<void> | void;
}

export interface SignerOptions {
  /** Reads (may batch JSON-RPC calls). */
  client: PublicClient;
  /** The relayer keys (addresses, receipts of what they sent). */
  relayers: RelayerPool;
  /** Where sends go: batches per lane (a batcher with maxCalls 1 sends each alone). */
  batcher: SettlementBatcher;
  /** Payers' code, per block (shared with the facilitator's contract-payer check). */
  payerCode: PayerCode;
  /** No transaction leaves with a higher gas limit (FACILITATOR_MAX_SETTLE_GAS). */
  maxGas: bigint;
  confirmationTimeoutMs: number;
  hooks?: SignerHooks;
}

// What the SDK's parseEip3009TransferError looks for, per custom error of the token.
const REVERT_WORDS: Record<string, string> = {
  AuthorizationExpired: 'authorization expired',
  AuthorizationInvalid: 'authorization not yet valid',
  InsufficientFunds: 'insufficient balance',
  InvalidSignature: 'invalid signature',
};

/** One settlement call to send: `alone` keeps it out of batches (see batcher.ts). */
export interface SettlementCall {
  to: Address;
  data: Hex;
  /** The limit to use (capped at the ceiling); estimated under the ceiling when absent (and no simulated limit is on the call). */
  gas?: bigint;
  payer: string;
  alone?: boolean;
  /** The relayer key that must send it (an upto permit names its facilitator): estimated as that sender, sent alone from its lane. */
  from?: Address;
  /** This call's gas ceiling, when its scheme has its own (a Permit2 settle); FACILITATOR_MAX_SETTLE_GAS otherwise. */
  ceiling?: bigint;
}

export type FacilitatorSigner = FacilitatorEvmSigner & { sendSettlement(call: SettlementCall): Promise<Hash> };

export function createFacilitatorSigner(options: SignerOptions): FacilitatorSigner {
  const { client, relayers, batcher } = options;
  const noteFailure = (error: unknown) => {
    const call = currentCall();
    if (call && isTransportError(error)) call.rpcFailure ??= error;
  };

  /**
   * Sends one settlement call through the batcher, recording its hash in the ledger before returning it.
   * Estimation under the ceiling is the last pre-broadcast check (a revert here means nothing was sent),
   * unless the settle simulated this very transfer a moment ago and passes a limit. Either way the limit
   * never exceeds the ceiling.
   */
  async function sendSettlement(call: SettlementCall): Promise<Hash> {
    const attempt = currentCall()?.settle;
    let gas: bigint;
    try {
      // Any lane's address will do (estimation depends on the sender only through its balance, and every lane has
      // gas), unless the call checks its sender.
      const ceiling = call.ceiling ?? options.maxGas;
      const limit = call.gas ?? attempt?.gasLimit ?? (await gasWithin(client, { account: call.from ?? relayers.addresses[0]!, to: call.to, data: call.data }, ceiling));
      gas = limit < ceiling ? limit : ceiling;
    } catch (error) {
      noteFailure(error);
      const current = currentCall();
      if (error instanceof GasCeilingError && current) current.gasRefusal = error;
      throw error instanceof GasCeilingError ? error : describeRevert(error);
    }
    // A settle that stalled past its owner lease may have been taken over (execute.ts's executeOrphan):
    // then the new owner sends, not this one.
    await options.hooks?.beforeSend?.();
    if (attempt && performance.now() >= attempt.surelyOwnedUntil && !(await attempt.ledger.owns(attempt.key, attempt.claimToken))) {
      currentCall()!.claimLost = true;
      throw new ClaimTakenOverError('the settlement claim was taken over by another settle; nothing was sent');
    }
    let hash: Hash;
    try {
      hash = await batcher.send(
        { to: call.to, data: call.data, gas },
        {
          payer: call.payer,
          alone: call.alone || attempt?.alone,
          lane: call.from,
          // A stuck send re-sent with higher fees: retries and the reconciler follow the new hash.
          onReplaced: attempt
            ? async (replacement) => {
                attempt.txHash = replacement;
                await attempt.ledger.recordBroadcast(attempt.key, replacement);
              }
            : undefined,
        },
      );
    } catch (error) {
      if (error instanceof BroadcastUncertainError && attempt) {
        attempt.txHash = error.hash;
        attempt.uncertain = true;
        await attempt.ledger.recordBroadcast(attempt.key, error.hash);
        attempt.recorded = true;
      } else {
        // Nothing was sent (a read failed, or the node refused the transaction).
        noteFailure(error);
        const current = currentCall();
        if (current) current.sendFailure ??= error;
      }
      throw error;
    }
    if (attempt) attempt.txHash = hash;
    try {
      await options.hooks?.afterBroadcast?.(hash);
    } catch (error) {
      if (attempt) attempt.crash = error;
      throw error;
    }
    crashPoint('settle.after-broadcast');
    if (attempt) {
      await attempt.ledger.recordBroadcast(attempt.key, hash);
      attempt.recorded = true;
    }
    return hash;
  }

  return {
    getAddresses: () => relayers.addresses,

    async readContract(args) {
      try {
        // The SDK simulates an upto settle with this call: the proxy accepts it only from the facilitator the payer named.
        const account = uptoSender(args.address, args.functionName, args.args);
        return await client.readContract({ ...args, abi: args.abi as Abi, args: args.args ?? [], ...(account ? { account } : {}) } as never);
      } catch (error) {
        noteFailure(error);
        throw error;
      }
    },

    verifyTypedData: (args) => client.verifyTypedData(args as never),

    getCode({ address }) {
      const call = currentCall();
      const key = address.toLowerCase();
      const cached = call?.codes.get(key);
      if (cached) return cached;
      const code = options.payerCode.code(address).catch((error: unknown) => {
        noteFailure(error);
        return undefined;
      });
      call?.codes.set(key, code);
      return code;
    },

    writeContract(args) {
      const data = concat([
        encodeFunctionData({ abi: args.abi as Abi, functionName: args.functionName, args: args.args }),
        ...(args.dataSuffix ? [args.dataSuffix] : []),
      ]);
      // The SDK's path: payloads that were not plainly valid (contract signers among them) go out alone.
      return sendSettlement({ to: args.address, data, gas: args.gas, payer: String((args.args as unknown[])[0]), alone: true });
    },

    sendSettlement,
    sendTransaction: async () => {
      throw new Error('smart-wallet deployment (ERC-6492) is not supported by this facilitator');
    },

    async waitForTransactionReceipt({ hash }) {
      if (batcher.isBatch(hash)) crashPoint('batch.receipt-wait');
      // Whichever version mined (the original or a replacement) is the settlement transaction.
      const receipt = await (relayers.waitForReceipt(hash, options.confirmationTimeoutMs) ?? receiptOf(client, hash, options.confirmationTimeoutMs));
      const attempt = currentCall()?.settle;
      if (attempt) {
        attempt.receipt = receipt;
        if (attempt.txHash) attempt.txHash = receipt.transactionHash;
      }
      return receipt;
    },
  };
}

/** The witness's facilitator of an upto proxy settle (the sender its simulation must run as); undefined for any other call. */
function uptoSender(address: Address, functionName: string, args: readonly unknown[] | undefined): Address | undefined {
  if (!isAddressEqual(address, UPTO_PERMIT2_PROXY) || (functionName !== 'settle' && functionName !== 'settleWithPermit')) return undefined;
  const witness = (args ?? []).find((a): a is { facilitator: Address } => typeof a === 'object' && a !== null && 'facilitator' in a);
  return witness?.facilitator;
}

/** Automine answers at once, so ask before falling back to polling with a deadline. */
export async function receiptOf(client: PublicClient, hash: Hash, timeoutMs: number): Promise<TransactionReceipt> {
  try {
    return await client.getTransactionReceipt({ hash });
  } catch (error) {
    if (!(error instanceof TransactionReceiptNotFoundError)) throw error;
  }
  return client.waitForTransactionReceipt({ hash, timeout: timeoutMs, pollingInterval: Math.min(client.pollingInterval, 500) });
}

/** Decodes the token's custom error so the SDK maps it to its reason code (e.g. insufficient balance). */
function describeRevert(error: unknown): unknown {
  if (!(error instanceof BaseError)) return error;
  const withData = error.walk((e) => typeof (e as { data?: unknown }).data === 'string') as { data?: Hex } | null;
  const data = withData?.data;
  if (!data || data.length < 10) return error;
  try {
    const { errorName } = decodeErrorResult({ abi: eip3009Abi, data });
    const words = REVERT_WORDS[errorName];
    return new Error(`transferWithAuthorization reverted: ${errorName}${words ? ` (${words})` : ''}`, { cause: error });
  } catch {
    return error;
  }
}

/** The settle lost its claim before sending (its lease lapsed and another settle took it over). */
class ClaimTakenOverError extends Error {}
