// Our x402 facilitator: the @x402 exact EVM scheme (EIP-3009 only, eip155:4663) behind a durable
// settlement ledger. A payment is settled at most once, whatever retries, concurrent calls or crashes
// happen: the first settle claims the (network, asset, payer, nonce) row, every other call resolves
// that row (in-process by joining the running promise, across nodes from the ledger and the chain).
import { x402Facilitator } from '@x402/core/facilitator';
import type { PaymentPayload, PaymentRequirements, SettleResponse, SupportedResponse, VerifyResponse } from '@x402/core/types';
import type { FacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from '@x402/evm/exact/facilitator';
import { createPublicClient, getAddress, http, type Address, type Chain, type Hash, type PublicClient } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import type { Logger } from 'pino';
import { eip3009Abi } from '../../chain/eip3009.js';
import { ChainUnavailableError, isTransportError } from '../../chain/errors.js';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import type { SettlementRow } from '../tables.js';
import { newCallContext, runInCall, type SettleAttempt } from './call-context.js';
import { chainVerdict } from './chain-verdict.js';
import { keyOf, keyString, SettlementLedger, type SettlementKey } from './ledger.js';
import { PgPendingSettlementStore } from './pending-store.js';
import type { Eip3009Payload } from '../payload.js';
import { payloadHashOf, precheck } from './precheck.js';
import { QuickChecker, type QuickCheck } from './quick-check.js';
import { judgeReceipt } from './receipt.js';
import { Reason } from './reasons.js';
import { RelayerSender } from './sender.js';
import { createFacilitatorSigner, type SignerHooks } from './signer.js';

export interface FacilitatorDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  chain: { network: string; chainId: number; rpcUrl: string; viemChain: Chain; publicClient: PublicClient };
  relayer: PrivateKeyAccount;
}

export interface FacilitatorOptions {
  /** Receipt wait per settle; keep it below every facilitator client's HTTP timeout. */
  confirmationTimeoutMs?: number;
  /** How long a retry waits for a settlement another call or node is running before answering pending. */
  joinWaitMs?: number;
  /** Open rows younger than this belong to a live settle; the reconciler leaves them alone. */
  reconcileAfterMs?: number;
  hooks?: SignerHooks;
}

// transferWithAuthorization costs ~60-85k gas (more when the payee's balance slot is new); only used gas is paid.
const SIMULATED_TRANSFER_GAS = 150_000n;

/** Tollgate marks a SettleResponse that repeats an earlier settle of the same payment. */
export const REPLAY_MARK = 'idempotentReplay';

export class Facilitator {
  readonly ledger: SettlementLedger;
  readonly signer: FacilitatorEvmSigner;
  readonly #sdk: x402Facilitator;
  readonly #client: PublicClient;
  readonly #network: string;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #inflight = new Map<string, Promise<SettleResponse>>();
  readonly #joinWaitMs: number;
  readonly #reconcileAfterMs: number;
  readonly #assetsWithCode = new Set<string>();
  readonly #quickChecker: QuickChecker;

  constructor(deps: FacilitatorDeps, options: FacilitatorOptions = {}) {
    // Its own client with JSON-RPC batching: concurrent verifies and settles share HTTP requests.
    this.#client = createPublicClient({
      chain: deps.chain.viemChain,
      transport: http(deps.chain.rpcUrl, { batch: { batchSize: 64, wait: 0 }, retryCount: 1 }),
      pollingInterval: deps.chain.publicClient.pollingInterval,
    });
    this.#network = deps.chain.network;
    this.#log = deps.log;
    this.#clock = deps.clock;
    this.#joinWaitMs = options.joinWaitMs ?? 20_000;
    this.#reconcileAfterMs = options.reconcileAfterMs ?? 15_000;
    this.ledger = new SettlementLedger(deps.db, deps.clock);
    this.#quickChecker = new QuickChecker(this.#client, (asset) => this.#assetHasCode(asset));
    // Sends: unbatched (the serial send queue should not wait for a batch) and never retried by the transport.
    const sendClient = createPublicClient({ chain: deps.chain.viemChain, transport: http(deps.chain.rpcUrl, { retryCount: 0 }) });
    const sender = new RelayerSender(deps.relayer, sendClient, deps.chain.chainId);
    this.signer = createFacilitatorSigner({
      client: this.#client,
      sender,
      confirmationTimeoutMs: options.confirmationTimeoutMs ?? 30_000,
      hooks: options.hooks,
    });
    // register(), not registerExactEvmScheme(): that also adds v1 kinds for two dozen other networks.
    this.#sdk = new x402Facilitator().register(
      this.#network as `${string}:${string}`,
      new ExactEvmFacilitatorScheme(this.signer, { pendingSettlementStore: new PgPendingSettlementStore(this.ledger) }),
    );
  }

  supported(): SupportedResponse {
    return this.#sdk.getSupported() as SupportedResponse;
  }

  /** Off-chain checks plus a simulation; no state is written. Throws ChainUnavailableError when the RPC does not answer. */
  async verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    const pre = precheck(this.#network, payload, requirements);
    if (!pre.ok) return { isValid: false, invalidReason: pre.reason, invalidMessage: pre.message, payer: pre.payer };
    const payer = pre.eip3009.authorization.from;
    const quick = await this.#quick(payload, requirements, pre.eip3009);
    if (quick === 'used' || (quick === 'valid' && this.#inflight.has(keyString(pre.key)))) return alreadyUsed(payer);
    if (quick === 'valid') return { isValid: true, payer };
    return this.#schemeVerify(pre.key, payload, requirements);
  }

  /**
   * Settles once per authorization. Failures come back as `success: false` with a reason; a
   * `settlement_pending` answer means the transaction may be in flight (retry the same settle).
   * Throws ChainUnavailableError only when nothing can have been broadcast.
   */
  async settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const pre = precheck(this.#network, payload, requirements);
    if (!pre.ok) return failure(requirements.network, pre.reason, pre.message, pre.payer);
    const id = keyString(pre.key);
    const running = this.#inflight.get(id);
    if (running) {
      await running.catch(() => undefined);
      return this.settle(payload, requirements);
    }
    const settling = this.#settleKey(pre.key, payloadHashOf(pre.key, requirements, pre.eip3009), pre.eip3009, payload, requirements);
    this.#inflight.set(id, settling);
    try {
      return await settling;
    } finally {
      this.#inflight.delete(id);
    }
  }

  /** Worker: resolves open rows nobody is working on (crash between broadcast and record, lost receipts). */
  async reconcileOpen(limit = 50): Promise<{ checked: number; resolved: number }> {
    const rows = await this.ledger.listOpen(new Date(this.#clock.now().getTime() - this.#reconcileAfterMs), limit);
    let resolved = 0;
    for (const row of rows) {
      if (this.#inflight.has(keyString(row))) continue;
      try {
        if (await this.reconcile(row)) resolved += 1;
        else await this.ledger.touch(keyOf(row));
      } catch (error) {
        this.#log.warn({ err: error, nonce: row.nonce, payer: row.payer }, 'settlement reconcile failed');
      }
    }
    return { checked: rows.length, resolved };
  }

  /** Resolves one open row from the chain; returns the final row, or null while undecidable. */
  async reconcile(row: SettlementRow): Promise<SettlementRow | null> {
    const verdict = await chainVerdict(this.#client, row);
    if (verdict.kind === 'pending') return null;
    const response =
      verdict.kind === 'settled'
        ? { success: true, transaction: verdict.txHash, network: row.network as `${string}:${string}`, payer: row.payer }
        : failure(row.network, verdict.reason, verdict.message, row.payer, verdict.txHash ?? '');
    const final = await this.ledger.finish(keyOf(row), { status: verdict.kind, response });
    this.#log.info({ nonce: row.nonce, payer: row.payer, status: final.status, tx: final.txHash }, 'settlement reconciled from chain');
    return final;
  }

  async #settleKey(
    key: SettlementKey,
    payloadHash: string,
    eip3009: Eip3009Payload,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
  ): Promise<SettleResponse> {
    // Only a payment the payer really signed gets a row: a forged payload must not block the real one.
    const quick = await this.#quick(payload, requirements, eip3009);
    if (quick !== 'valid') {
      const existing = await this.ledger.find(key);
      if (existing) return this.#resume(existing, payloadHash);
      if (quick === 'used') return failure(requirements.network, Reason.nonceAlreadyUsed, 'the authorization is already used or canceled', key.payer);
      const verdict = await this.#schemeVerify(key, payload, requirements);
      if (!verdict.isValid) {
        return failure(requirements.network, verdict.invalidReason ?? Reason.invalidPayload, verdict.invalidMessage ?? 'invalid payment', verdict.payer ?? key.payer);
      }
    }
    const fromBlock = Number(await this.#client.getBlockNumber({ cacheTime: 2_000 }).catch(() => 0n));
    const claim = await this.ledger.claim({
      ...key,
      payTo: getAddress(requirements.payTo),
      amount: requirements.amount,
      validBefore: eip3009.authorization.validBefore,
      signature: eip3009.signature,
      payloadHash,
      claimToken: crypto.randomUUID(),
      fromBlock: Math.max(0, fromBlock - 5),
    });
    if (!claim.claimed) return this.#resume(claim.row, payloadHash);
    return this.#execute(claim.row, payload, requirements, quick === 'valid' ? SIMULATED_TRANSFER_GAS : undefined);
  }

  async #execute(row: SettlementRow, payload: PaymentPayload, requirements: PaymentRequirements, gasLimit?: bigint): Promise<SettleResponse> {
    const key = keyOf(row);
    const release = () => this.ledger.release(key, row.claimToken);
    const attempt: SettleAttempt = { key, signature: row.signature, ledger: this.ledger, gasLimit, recorded: false, uncertain: false };
    const call = newCallContext(attempt);
    let result: SettleResponse;
    try {
      result = await runInCall(call, () => this.#sdk.settle(payload, requirements));
    } catch (error) {
      if (!attempt.txHash) await release();
      throw error;
    }
    if (attempt.txHash && !attempt.recorded) {
      // The hash never reached the ledger (what a crash right after sending looks like): the row
      // stays open for the reconciler, which finds the transaction through the token's logs.
      throw attempt.crash ?? new Error('settlement broadcast but not recorded');
    }
    if (attempt.uncertain || result.errorReason === Reason.settlementPending) {
      return failure(row.network, Reason.settlementPending, 'transaction sent; outcome not known yet, retry the same settle', row.payer, attempt.txHash ?? result.transaction);
    }
    if (!attempt.txHash && (call.rpcFailure || call.sendFailure)) {
      // Nothing was sent and the payment is not at fault: free the claim so a retry can settle it.
      await release();
      throw new ChainUnavailableError(call.rpcFailure ?? call.sendFailure);
    }
    if (attempt.txHash && attempt.receipt) {
      const verdict = judgeReceipt(attempt.receipt, { ...key, payTo: row.payTo, amount: row.amount });
      result = verdict.ok
        ? { success: true, transaction: attempt.txHash, network: row.network as `${string}:${string}`, payer: row.payer }
        : failure(row.network, verdict.reason, verdict.message, row.payer, attempt.txHash);
    }
    return this.#finish(key, result);
  }

  /** Another call owns (or owned) this payment: return its outcome, resolving it from the chain if need be. */
  async #resume(row: SettlementRow, payloadHash: string): Promise<SettleResponse> {
    if (row.payloadHash !== payloadHash) {
      return failure(row.network, Reason.nonceAlreadyUsed, 'this authorization nonce belongs to another payment', row.payer);
    }
    const deadline = Date.now() + this.#joinWaitMs;
    let current: SettlementRow | null = row;
    while (current && (current.status === 'claimed' || current.status === 'broadcast')) {
      const final: SettlementRow | null = await this.reconcile(current).catch((error: unknown) => {
        if (isTransportError(error)) return null;
        throw error;
      });
      if (final) current = final;
      else if (Date.now() >= deadline) {
        return failure(row.network, Reason.settlementPending, 'settlement in progress; retry the same settle', row.payer, current.txHash ?? '');
      } else {
        await sleep(200);
        current = await this.ledger.find(keyOf(row));
      }
    }
    if (!current?.response) throw new Error('settlement row vanished');
    return { ...(current.response as SettleResponse), extra: { ...(current.response as SettleResponse).extra, [REPLAY_MARK]: true } };
  }

  async #finish(key: SettlementKey, response: SettleResponse): Promise<SettleResponse> {
    const row = await this.ledger.finish(key, { status: response.success ? 'settled' : 'failed', response });
    return row.response as SettleResponse;
  }

  #authorizationUsed(key: SettlementKey): Promise<boolean> {
    return this.#client.readContract({
      address: key.asset as `0x${string}`,
      abi: eip3009Abi,
      functionName: 'authorizationState',
      args: [key.payer as `0x${string}`, key.nonce as `0x${string}`],
    });
  }

  /** The SDK's exact scheme verify (precise reason codes), plus the token's own word on the nonce. */
  async #schemeVerify(key: SettlementKey, payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    const call = newCallContext();
    const [result, used] = await runInCall(call, () =>
      Promise.all([this.#sdk.verify(payload, requirements), this.#authorizationUsed(key).catch((e: unknown) => e)]),
    );
    if (call.rpcFailure) throw new ChainUnavailableError(call.rpcFailure);
    if (used instanceof Error) throw isTransportError(used) ? new ChainUnavailableError(used) : used;
    // USDG quirk: the simulation of a reused nonce succeeds, so ask the token directly.
    if (result.isValid && used === true) return alreadyUsed(result.payer);
    return result;
  }

  async #quick(payload: PaymentPayload, requirements: PaymentRequirements, eip3009: Eip3009Payload): Promise<QuickCheck> {
    try {
      return await this.#quickChecker.check(payload, requirements, eip3009);
    } catch (error) {
      throw isTransportError(error) ? new ChainUnavailableError(error) : error;
    }
  }

  /** Token contracts do not go away: a positive answer is kept for the life of the process. */
  readonly #assetHasCode = async (asset: Address): Promise<boolean> => {
    if (this.#assetsWithCode.has(asset)) return true;
    const code = await this.#client.getCode({ address: asset });
    if (!code || code === '0x') return false;
    this.#assetsWithCode.add(asset);
    return true;
  };
}

const alreadyUsed = (payer?: string): VerifyResponse => ({
  isValid: false,
  invalidReason: Reason.nonceAlreadyUsed,
  invalidMessage: 'the authorization is already used or being settled',
  payer,
});

function failure(network: string, reason: string, message: string, payer?: string, transaction: string = ''): SettleResponse {
  return { success: false, errorReason: reason, errorMessage: message, transaction: transaction as Hash | '', network: network as `${string}:${string}`, payer };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
