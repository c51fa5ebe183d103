// Our x402 facilitator: the @x402 exact EVM scheme (EIP-3009 only, eip155:4663) behind a durable
// settlement ledger. A payment is settled at most once, whatever retries, concurrent calls or crashes
// happen: the first settle claims the (network, asset, payer, nonce) row, every other call resolves
// that row (in-process by joining the running promise, across nodes from the ledger and the chain).
// And `success: true` is said once per authorization, ever: resource servers (the official
// middleware among them) serve on that word alone, so every other settle of the same authorization
// is told `nonce_already_used` with the transaction, a retry carrying the first settle's
// payment-identifier included (the id is not signed: anyone can copy it onto copies of a payment).
//
// This file is the door and the wiring: its options, the parts every scheme shares, and which scheme answers a
// call. The jobs live beside it: verify.ts (an exact payment's verify), settle.ts (its settle up to the claim),
// execute.ts (the send of a claimed row, any scheme), judge.ts (what the chain says a settle did) and
// answering.ts (which caller is told what); Permit2 and batch-settlement have their own folders.
import { x402Facilitator, type PendingSettlementStore } from '@x402/core/facilitator';
import type { PaymentPayload, PaymentRequirements, SettleResponse, SupportedResponse, VerifyResponse } from '@x402/core/types';
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from '@x402/evm/exact/facilitator';
import { UptoEvmScheme as UptoEvmFacilitatorScheme } from '@x402/evm/upto/facilitator';
import { BatchSettlementEvmScheme as BatchSettlementFacilitatorScheme } from '@x402/evm/batch-settlement/facilitator';
import { createPublicClient, type Chain, type Hash, type PublicClient } from 'viem';
import type { LocalAccount } from 'viem/accounts';
import type { Logger } from 'pino';
import { createBlockClock, type BlockClock } from '../../chain/block-clock.js';
import { ChainUnavailableError } from '../../chain/errors.js';
import { rpcTransport } from '../../chain/rpc-fetch.js';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import type { Caller } from '../../platform/request-context.js';
import { definedOnly } from '../../platform/defined-only.js';
import type { SettlementRow } from '../tables.js';
import { SettleAnswers } from './answering.js';
import { BatchSettlements } from './batch/settlements.js';
import { DEFAULT_BATCH, SettlementBatcher, type BatchPolicy } from './batcher.js';
import { newCallContext, runInCall } from './call-context.js';
import { SettleExecutor, type ExecuteOptions } from './execute.js';
import { GasFloat, type FloorName, type GasFloors } from './gas-float.js';
import { reconcileFromChain } from './judge.js';
import { keyOf, keyString, SettlementLedger } from './ledger.js';
import { PayerCode, type ContractPayers } from './payer-code.js';
import { PAYMENT_IDENTIFIER } from './payment-id.js';
import { PgPendingSettlementStore } from './pending-store.js';
import { Permit2Payments } from './permit2/payments.js';
import { RelayerPool, type RelayerStatus } from './relayer-pool.js';
import { ExactSettler } from './settle.js';
import type { SettlePolicy } from './settle-policy.js';
import { createFacilitatorSigner, type FacilitatorSigner, type SignerHooks } from './signer.js';
import { ExactVerifier } from './verify.js';


export interface FacilitatorDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  chain: { network: string; chainId: number; rpcUrl: string; viemChain: Chain; publicClient: PublicClient; blockTime?: BlockClock };
  /** The relayer key, or a pool of keys (one nonce lane each; settles spread over them). */
  relayer: LocalAccount | readonly LocalAccount[];
  /** The terms and budgets every settle meets before it may spend gas (settle-policy.ts); none in engine-only tests. */
  policy?: SettlePolicy;
}

export interface FacilitatorOptions {
  /** Receipt wait per settle; keep it below every facilitator client's HTTP timeout. */
  confirmationTimeoutMs?: number;
  /** How long a retry waits for a settlement another call or node is running before answering pending. */
  joinWaitMs?: number;
  /** Open rows younger than this belong to a live settle; the reconciler leaves them alone. */
  reconcileAfterMs?: number;
  /**
   * How long a claiming settle may still be answering: until then only it may say `success: true`;
   * after it (its node died mid-settle), the next settle of the same payload may, once.
   */
  ownerLeaseMs?: number;
  /** A settlement transaction not mined this long after its last send is replaced with higher fees (default 20 s). */
  replaceAfterMs?: number;
  /** Replacements per stuck transaction at most (default 5). */
  maxReplacements?: number;
  /** Settles batched per relayer lane into Multicall3 transactions (batcher.ts); `maxCalls: 1` turns it off. */
  batch?: Partial<BatchPolicy>;
  /** No settlement transaction leaves with a higher gas limit (FACILITATOR_MAX_SETTLE_GAS; default DEFAULT_MAX_SETTLE_GAS). */
  maxSettleGas?: bigint;
  /** The same for a Permit2 settle, `exact` or `upto` (FACILITATOR_MAX_PERMIT2_SETTLE_GAS; default DEFAULT_MAX_PERMIT2_SETTLE_GAS). */
  maxPermit2SettleGas?: bigint;
  /** The same for a batch-settlement deposit, sweep or refund (FACILITATOR_MAX_BATCH_SETTLEMENT_GAS; default DEFAULT_MAX_BATCH_SETTLEMENT_GAS). */
  maxBatchSettlementGas?: bigint;
  /** A batch-settlement claim's ceiling per voucher it carries (FACILITATOR_MAX_CLAIM_GAS_PER_VOUCHER; default DEFAULT_MAX_CLAIM_GAS_PER_VOUCHER). */
  maxClaimGasPerVoucher?: bigint;
  /** Payers with code (contract wallets, EIP-7702 delegations): refused (default) or settled under the ceiling. */
  contractPayers?: ContractPayers;
  /** The relayer float below which the public doors, then every settle, stop (gas-float.ts; default none). */
  gasFloors?: GasFloors;
  /** relayerStatus() flags a key whose balance is below this (default 0.01 ETH). */
  lowGasWei?: bigint;
  hooks?: SignerHooks;
  /** Told of every verify and settle answer (metrics). */
  observer?: FacilitatorObserver;
}

/** One verify or settle answered: `isValid`/`success`, its reason when not, or `error` when it threw. */
export interface FacilitatorObserver {
  answered(operation: 'verify' | 'settle', answer: { ok: boolean; reason?: string } | 'error', seconds: number): void;
  /** A settlement transaction of this settle's mined: the gas it used (its share of a batch), and whether it paid. */
  gasSpent?(gas: bigint, outcome: 'settled' | 'failed', route?: string): void;
}

// An EOA's transferWithAuthorization costs 60-85k gas (more when the payee's balance slot is new, measured
// in test/adversarial/gas-ceiling.test.ts); the margin covers a chain that prices storage a little higher.
export const DEFAULT_MAX_SETTLE_GAS = 120_000n;
// A Permit2 settle runs the proxy, Permit2 (signature, nonce bitmap) and the token's transferFrom: measured in
// test/facilitator/permit2.test.ts (a new payee's balance slot included), with the same kind of margin.
export const DEFAULT_MAX_PERMIT2_SETTLE_GAS = 160_000n;
// batch-settlement (measured in test/facilitator/batch-settlement.test.ts): a first deposit into a channel, a
// sweep and a refund each stay under this; a claim pays CLAIM_BASE_GAS plus this per voucher.
export const DEFAULT_MAX_BATCH_SETTLEMENT_GAS = 250_000n;
export const DEFAULT_MAX_CLAIM_GAS_PER_VOUCHER = 60_000n;

export class Facilitator {
  readonly ledger: SettlementLedger;
  readonly signer: FacilitatorSigner;
  readonly batcher: SettlementBatcher;
  readonly #sdk: x402Facilitator;
  readonly #client: PublicClient;
  readonly #log: Logger;
  readonly #observer: FacilitatorObserver | null;
  readonly #clock: Clock;
  readonly #inflight = new Map<string, Promise<SettleResponse>>();
  readonly #reconcileAfterMs: number;
  readonly #blockTime: BlockClock;
  readonly #relayers: RelayerPool;
  /** `exact` over EIP-3009, this facilitator's own scheme: its verify, and its settle up to the claim. */
  readonly #verifier: ExactVerifier;
  readonly #settler: ExactSettler;
  /** After a claim, for every scheme: the send and its judgment, and the answer to each caller. */
  readonly #executor: SettleExecutor;
  readonly #answers: SettleAnswers;
  /** `exact` over Permit2 and `upto`: their own checks and send; claims, answers and recovery are this class's. */
  readonly #permit2: Permit2Payments;
  /** batch-settlement: deposits, claims, sweeps and refunds; deposits and refunds take this class's single-row path. */
  readonly #batch: BatchSettlements;
  readonly gasFloat: GasFloat;

  constructor(deps: FacilitatorDeps, options: FacilitatorOptions = {}) {
    // Its own client with JSON-RPC batching: concurrent verifies and settles share HTTP requests.
    this.#client = createPublicClient({
      chain: deps.chain.viemChain,
      transport: rpcTransport(deps.chain.rpcUrl, { batch: { batchSize: 64, wait: 0 }, retryCount: 1 }),
      pollingInterval: deps.chain.publicClient.pollingInterval,
    });
    const network = deps.chain.network;
    const chainId = deps.chain.chainId;
    this.#log = deps.log;
    this.#clock = deps.clock;
    this.#observer = options.observer ?? null;
    this.#reconcileAfterMs = options.reconcileAfterMs ?? 15_000;
    const ownerLeaseMs = options.ownerLeaseMs ?? (options.confirmationTimeoutMs ?? 30_000) + 60_000;
    this.ledger = new SettlementLedger(deps.db, deps.clock);
    this.#blockTime = deps.chain.blockTime ?? createBlockClock(this.#client, null);
    const payerCode = new PayerCode(this.#client, Math.min(deps.chain.publicClient.pollingInterval, 1_000));
    const maxSettleGas = options.maxSettleGas ?? DEFAULT_MAX_SETTLE_GAS;
    const contractPayers = options.contractPayers ?? 'refuse';
    // Sends: unbatched (the serial send queue should not wait for a batch) and never retried by the transport.
    const sendClient = createPublicClient({ chain: deps.chain.viemChain, transport: rpcTransport(deps.chain.rpcUrl, { retryCount: 0 }) });
    this.#relayers = new RelayerPool({
      accounts: Array.isArray(deps.relayer) ? deps.relayer : [deps.relayer as LocalAccount],
      client: sendClient,
      readClient: this.#client,
      chainId: deps.chain.chainId,
      replacement: { replaceAfterMs: options.replaceAfterMs, maxReplacements: options.maxReplacements, pollMs: Math.min(deps.chain.publicClient.pollingInterval, 500) },
      lowGasWei: options.lowGasWei,
      log: deps.log,
    });
    const policy = deps.policy ?? null;
    this.gasFloat = new GasFloat(this.#client, this.#relayers.addresses, options.gasFloors ?? { publicWei: 0n, ownWei: 0n });
    this.batcher = new SettlementBatcher(this.#relayers, { ...DEFAULT_BATCH, ...definedOnly(options.batch ?? {}) }, deps.log);
    this.signer = createFacilitatorSigner({
      client: this.#client,
      relayers: this.#relayers,
      batcher: this.batcher,
      payerCode,
      maxGas: maxSettleGas,
      confirmationTimeoutMs: options.confirmationTimeoutMs ?? 30_000,
      hooks: options.hooks,
    });
    // register(), not registerExactEvmScheme(): that also adds v1 kinds for two dozen other networks.
    this.#sdk = new x402Facilitator().register(
      network as `${string}:${string}`,
      new ExactEvmFacilitatorScheme(this.signer, { pendingSettlementStore: followReplacements(new PgPendingSettlementStore(this.ledger), this.#relayers) }),
    );
    // upto (Permit2, through x402UptoPermit2Proxy): /supported names the relayer a payer must name as its facilitator.
    this.#sdk.register(network as `${string}:${string}`, new UptoEvmFacilitatorScheme(this.signer));
    // batch-settlement: no receiverAuthorizer signer, so none is advertised (sellers sign their own claims and refunds).
    this.#sdk.register(network as `${string}:${string}`, new BatchSettlementFacilitatorScheme(this.signer));
    // Advertised in /supported: settle honours the payment-identifier (see SettleAnswers.resume).
    this.#sdk.registerExtension({ key: PAYMENT_IDENTIFIER });
    const sdkVerify = async (payload: PaymentPayload, requirements: PaymentRequirements) => {
      const call = newCallContext();
      const result = await runInCall(call, () => this.#sdk.verify(payload, requirements));
      if (call.rpcFailure) throw new ChainUnavailableError(call.rpcFailure);
      return result;
    };
    const parts = { network, chainId, client: this.#client, ledger: this.ledger, blockTime: this.#blockTime, log: this.#log, policy, gasFloat: this.gasFloat };
    const afterClaim = {
      inflight: this.#inflight,
      resume: (row: SettlementRow, call: { payloadHash: string; paymentId: string | null }) => this.#answers.resume(row, call),
      execute: (row: SettlementRow, payload: PaymentPayload, requirements: PaymentRequirements, opts: ExecuteOptions) =>
        this.#executor.execute(row, payload, requirements, opts),
      finishOwned: (row: SettlementRow, response: SettleResponse, logIndex?: number) => this.#answers.finishOwned(row, response, logIndex),
    };
    this.#verifier = new ExactVerifier({
      network,
      client: this.#client,
      sdk: this.#sdk,
      blockTime: this.#blockTime,
      payerCode,
      contractPayers,
      policy,
      maxSettleGas,
      relayers: () => this.#relayers.addresses,
      inflight: this.#inflight,
    });
    this.#settler = new ExactSettler({ ...parts, verifier: this.#verifier, ...afterClaim });
    this.#answers = new SettleAnswers({
      ledger: this.ledger,
      batcher: this.batcher,
      joinWaitMs: options.joinWaitMs ?? 20_000,
      ownerLeaseMs,
      reconcile: (row) => this.reconcile(row),
      executeOrphan: (row) => this.#executor.executeOrphan(row),
    });
    this.#executor = new SettleExecutor({
      client: this.#client,
      blockTime: this.#blockTime,
      batcher: this.batcher,
      observer: this.#observer,
      schemeVerify: (key, payload, requirements) => this.#verifier.schemeVerify(key, payload, requirements),
      ledger: this.ledger,
      signer: this.signer,
      log: this.#log,
      sdk: this.#sdk,
      ownerLeaseMs,
      maxSettleGas,
      sendPermit2: (row, payload, requirements) => this.#permit2.send(row, payload, requirements),
      sendBatch: (row, payload, requirements) => this.#batch.send(row, payload, requirements),
      finishOwned: (row, response, logIndex, answer) => this.#answers.finishOwned(row, response, logIndex, answer),
    });
    this.#batch = new BatchSettlements({
      ...parts,
      signer: this.signer,
      payerCode,
      contractPayers,
      maxGas: options.maxBatchSettlementGas ?? DEFAULT_MAX_BATCH_SETTLEMENT_GAS,
      claimGasPerVoucher: options.maxClaimGasPerVoucher ?? DEFAULT_MAX_CLAIM_GAS_PER_VOUCHER,
      sdkVerify,
      ...afterClaim,
    });
    this.#permit2 = new Permit2Payments({
      ...parts,
      signer: this.signer,
      payerCode,
      contractPayers,
      maxGas: options.maxPermit2SettleGas ?? DEFAULT_MAX_PERMIT2_SETTLE_GAS,
      relayers: () => this.#relayers.addresses,
      sdkVerify,
      ...afterClaim,
    });
  }

  /** Throws GasFloatLowError (a ChainUnavailableError) when the relayer's float is below the named floor. */
  requireFloat(floor: FloorName): Promise<void> {
    return this.gasFloat.require(floor);
  }

  /** Per relayer key: gas balance, the node's nonces, the gap between them, and whether gas runs low. */
  relayerStatus(): Promise<RelayerStatus[]> {
    return this.#relayers.status(this.#client);
  }

  supported(): SupportedResponse {
    return this.#sdk.getSupported() as SupportedResponse;
  }

  /**
   * Off-chain checks plus a simulation; no state is written. Throws ChainUnavailableError when the RPC does not answer.
   * `caller`: the request this verify answers (its id is in the answer's log line).
   */
  verify(payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller): Promise<VerifyResponse> {
    return this.#observed('verify', caller, this.#verify(payload, requirements), (answer) => ({ ok: answer.isValid, reason: answer.invalidReason }));
  }

  async #verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    if (this.#batch.handles(payload, requirements)) return this.#batch.verify(payload, requirements);
    if (this.#permit2.handles(payload, requirements)) return this.#permit2.verify(payload, requirements);
    return this.#verifier.verify(payload, requirements);
  }

  /**
   * Settles once per authorization. Failures come back as `success: false` with a reason; a
   * `settlement_pending` answer means the transaction may be in flight (retry the same settle).
   * Throws ChainUnavailableError only when nothing can have been broadcast. `caller`: the request this settle answers
   * (its id is in the answer's log line, its route labels the gas spent).
   */
  settle(payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller): Promise<SettleResponse> {
    return this.#observed('settle', caller, this.#settle(payload, requirements, caller), (answer) => ({ ok: answer.success, reason: answer.errorReason }));
  }

  /** Logs (debug) and reports each answer: the line carries the request id of the call it answers. */
  async #observed<T>(operation: 'verify' | 'settle', caller: Caller | undefined, answering: Promise<T>, outcome: (answer: T) => { ok: boolean; reason?: string }): Promise<T> {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const answer = await answering;
      const { ok, reason } = outcome(answer);
      this.#log.debug({ reqId: caller?.requestId, operation, ok, reason, ms: Math.round(seconds() * 1000) }, `${operation} answered`);
      this.#observer?.answered(operation, { ok, reason }, seconds());
      return answer;
    } catch (error) {
      this.#log.debug({ reqId: caller?.requestId, operation, err: error, ms: Math.round(seconds() * 1000) }, `${operation} failed`);
      this.#observer?.answered(operation, 'error', seconds());
      throw error;
    }
  }

  async #settle(payload: PaymentPayload, requirements: PaymentRequirements, caller: Caller | undefined): Promise<SettleResponse> {
    if (this.#batch.handles(payload, requirements)) return this.#batch.settle(payload, requirements, caller);
    if (this.#permit2.handles(payload, requirements)) return this.#permit2.settle(payload, requirements, caller);
    return this.#settler.settle(payload, requirements, caller);
  }

  /** Worker: resolves open rows nobody is working on (crash between broadcast and record, lost receipts). */
  async reconcileOpen(limit = 50): Promise<{ checked: number; resolved: number }> {
    const rows = await this.ledger.listOpen(new Date(this.#clock.now().getTime() - this.#reconcileAfterMs), limit);
    let resolved = 0;
    for (const row of rows) {
      if (this.#inflight.has(keyString(row))) continue;
      try {
        if ((await this.reconcile(row)) || (await this.#executor.executeOrphan(row))) resolved += 1;
        else await this.ledger.touch(keyOf(row));
      } catch (error) {
        this.#log.warn({ err: error, nonce: row.nonce, payer: row.payer }, 'settlement reconcile failed');
      }
    }
    return { checked: rows.length, resolved };
  }

  /** Resolves one open row from the chain; returns the final row, or null while undecidable. */
  async reconcile(row: SettlementRow): Promise<SettlementRow | null> {
    return reconcileFromChain({ client: this.#client, ledger: this.ledger, blockTime: this.#blockTime, log: this.#log }, row);
  }
}

/**
 * The SDK records a receipt wait that timed out under the hash it sent; a lane may have replaced that
 * transaction since, so the ledger gets the newest version's hash instead.
 */
function followReplacements(store: PgPendingSettlementStore, relayers: RelayerPool): PendingSettlementStore {
  return {
    get: (signature) => store.get(signature),
    set: (signature, txHash) => store.set(signature, relayers.currentHash(txHash as Hash)),
    delete: () => store.delete(),
  };
}
