// Our x402 facilitator: the @x402 exact EVM scheme (EIP-3009 only, eip155:4663) behind a durable
// settlement ledger. A payment is settled at most once, whatever retries, concurrent calls or crashes
// happen: the first settle claims the (network, asset, payer, nonce) row, every other call resolves
// that row (in-process by joining the running promise, across nodes from the ledger and the chain).
// And `success: true` is said once per authorization, ever: resource servers (the official
// middleware among them) serve on that word alone, so every other settle of the same authorization
// is told `nonce_already_used` with the transaction, a retry carrying the first settle's
// payment-identifier included (the id is not signed: anyone can copy it onto copies of a payment).
import { x402Facilitator, type PendingSettlementStore } from '@x402/core/facilitator';
import type { PaymentPayload, PaymentRequirements, SettleResponse, SupportedResponse, VerifyResponse } from '@x402/core/types';
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from '@x402/evm/exact/facilitator';
import { UptoEvmScheme as UptoEvmFacilitatorScheme } from '@x402/evm/upto/facilitator';
import { BatchSettlementEvmScheme as BatchSettlementFacilitatorScheme } from '@x402/evm/batch-settlement/facilitator';
import { createPublicClient, getAddress, http, type Address, type Chain, type Hash, type PublicClient, type TransactionReceipt } from 'viem';
import type { LocalAccount } from 'viem/accounts';
import type { Logger } from 'pino';
import { eip3009Abi, transferWithAuthorizationTypes } from '../../chain/eip3009.js';
import { createBlockClock, type BlockClock } from '../../chain/block-clock.js';
import { ChainUnavailableError, isTransportError } from '../../chain/errors.js';
import { MULTICALL3_ADDRESS } from '../../chain/multicall3.js';
import { crashPoint } from '../../platform/crash-points.js';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import type { SettlementRow } from '../tables.js';
import { currentCall, newCallContext, runInCall, type SettleAttempt } from './call-context.js';
import { keyOf, keyString, SettlementLedger, type Answerer, type SettlementKey } from './ledger.js';
import { PAYMENT_IDENTIFIER, paymentIdOf } from './payment-id.js';
import { PgPendingSettlementStore } from './pending-store.js';
import type { Eip3009Payload } from '../payload.js';
import { timeBounds, type Refusal } from './bounds.js';
import { payloadHashOf, precheck } from './precheck.js';
import { QuickChecker, settlementCallData, transferWithAuthorizationData, type QuickCheck } from './quick-check.js';
import { ownWords, Reason } from './reasons.js';
import { RelayerPool, type RelayerStatus } from './relayer-pool.js';
import { definedOnly } from '../../platform/defined-only.js';
import { createFacilitatorSigner, type FacilitatorSigner, type SignerHooks } from './signer.js';
import { gasWithin, GasCeilingError } from './gas-ceiling.js';
import { hasCode, PayerCode, type ContractPayers } from './payer-code.js';
import { GasFloat, type FloorName, type GasFloors } from './gas-float.js';
import type { SettlePolicy } from './settle-policy.js';
import { DEFAULT_BATCH, SettlementBatcher, type BatchPolicy } from './batcher.js';
import { Permit2Payments } from './permit2/payments.js';
import { failure, idConflict, nonceUsedReason, settledBy } from './answers.js';
import { BatchSettlements } from './batch/settlements.js';
import { judgeRowReceipt, settlementVerdict } from './verdicts.js';

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
  gasSpent?(gas: bigint, outcome: 'settled' | 'failed'): void;
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

// A front-run is found by its AuthorizationUsed log this far back (Robinhood Chain: ~40 min of blocks).
const FRONT_RUN_LOOKBACK_BLOCKS = 10_000n;

/** One settle call: the authorization, which payload it is, and the payment-identifier it carries. */
interface SettleCall {
  key: SettlementKey;
  payloadHash: string;
  paymentId: string | null;
  eip3009: Eip3009Payload;
  /** Stored with the claim, so a takeover can execute it after this call's node died. */
  request: SettleRequest;
}

interface SettleRequest {
  payload: PaymentPayload;
  requirements: PaymentRequirements;
}

export class Facilitator {
  readonly ledger: SettlementLedger;
  readonly signer: FacilitatorSigner;
  readonly batcher: SettlementBatcher;
  readonly #sdk: x402Facilitator;
  readonly #client: PublicClient;
  readonly #network: string;
  readonly #log: Logger;
  readonly #observer: FacilitatorObserver | null;
  readonly #clock: Clock;
  readonly #inflight = new Map<string, Promise<SettleResponse>>();
  readonly #joinWaitMs: number;
  readonly #reconcileAfterMs: number;
  readonly #ownerLeaseMs: number;
  readonly #chainId: number;
  readonly #assetsWithCode = new Set<string>();
  readonly #quickChecker: QuickChecker;
  readonly #blockTime: BlockClock;
  readonly #relayers: RelayerPool;
  readonly #payerCode: PayerCode;
  readonly #maxSettleGas: bigint;
  readonly #contractPayers: ContractPayers;
  readonly #policy: SettlePolicy | null;
  /** `exact` over Permit2 and `upto`: their own checks and send; claims, answers and recovery are this class's. */
  readonly #permit2: Permit2Payments;
  /** batch-settlement: deposits, claims, sweeps and refunds; deposits and refunds take this class's single-row path. */
  readonly #batch: BatchSettlements;
  readonly gasFloat: GasFloat;

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
    this.#observer = options.observer ?? null;
    this.#reconcileAfterMs = options.reconcileAfterMs ?? 15_000;
    this.#ownerLeaseMs = options.ownerLeaseMs ?? (options.confirmationTimeoutMs ?? 30_000) + 60_000;
    this.#chainId = deps.chain.chainId;
    this.ledger = new SettlementLedger(deps.db, deps.clock);
    this.#quickChecker = new QuickChecker(this.#client, (asset) => this.#assetHasCode(asset));
    this.#blockTime = deps.chain.blockTime ?? createBlockClock(this.#client, null);
    this.#payerCode = new PayerCode(this.#client, Math.min(deps.chain.publicClient.pollingInterval, 1_000));
    this.#maxSettleGas = options.maxSettleGas ?? DEFAULT_MAX_SETTLE_GAS;
    this.#contractPayers = options.contractPayers ?? 'refuse';
    // Sends: unbatched (the serial send queue should not wait for a batch) and never retried by the transport.
    const sendClient = createPublicClient({ chain: deps.chain.viemChain, transport: http(deps.chain.rpcUrl, { retryCount: 0 }) });
    this.#relayers = new RelayerPool({
      accounts: Array.isArray(deps.relayer) ? deps.relayer : [deps.relayer as LocalAccount],
      client: sendClient,
      readClient: this.#client,
      chainId: deps.chain.chainId,
      replacement: { replaceAfterMs: options.replaceAfterMs, maxReplacements: options.maxReplacements, pollMs: Math.min(deps.chain.publicClient.pollingInterval, 500) },
      lowGasWei: options.lowGasWei,
      log: deps.log,
    });
    this.#policy = deps.policy ?? null;
    this.gasFloat = new GasFloat(this.#client, this.#relayers.addresses, options.gasFloors ?? { publicWei: 0n, ownWei: 0n });
    this.batcher = new SettlementBatcher(this.#relayers, { ...DEFAULT_BATCH, ...definedOnly(options.batch ?? {}) }, deps.log);
    this.signer = createFacilitatorSigner({
      client: this.#client,
      relayers: this.#relayers,
      batcher: this.batcher,
      payerCode: this.#payerCode,
      maxGas: this.#maxSettleGas,
      confirmationTimeoutMs: options.confirmationTimeoutMs ?? 30_000,
      hooks: options.hooks,
    });
    // register(), not registerExactEvmScheme(): that also adds v1 kinds for two dozen other networks.
    this.#sdk = new x402Facilitator().register(
      this.#network as `${string}:${string}`,
      new ExactEvmFacilitatorScheme(this.signer, { pendingSettlementStore: followReplacements(new PgPendingSettlementStore(this.ledger), this.#relayers) }),
    );
    // upto (Permit2, through x402UptoPermit2Proxy): /supported names the relayer a payer must name as its facilitator.
    this.#sdk.register(this.#network as `${string}:${string}`, new UptoEvmFacilitatorScheme(this.signer));
    // batch-settlement: no receiverAuthorizer signer, so none is advertised (sellers sign their own claims and refunds).
    this.#sdk.register(this.#network as `${string}:${string}`, new BatchSettlementFacilitatorScheme(this.signer));
    // Advertised in /supported: settle honours the payment-identifier (see #resume).
    this.#sdk.registerExtension({ key: PAYMENT_IDENTIFIER });
    const sdkVerify = async (payload: PaymentPayload, requirements: PaymentRequirements) => {
      const call = newCallContext();
      const result = await runInCall(call, () => this.#sdk.verify(payload, requirements));
      if (call.rpcFailure) throw new ChainUnavailableError(call.rpcFailure);
      return result;
    };
    const afterClaim = {
      inflight: this.#inflight,
      resume: (row: SettlementRow, call: Pick<SettleCall, 'payloadHash' | 'paymentId'>) => this.#resume(row, call),
      execute: (row: SettlementRow, payload: PaymentPayload, requirements: PaymentRequirements, opts: { claimAskedAt: number }) => this.#execute(row, payload, requirements, opts),
      finishOwned: (row: SettlementRow, response: SettleResponse, logIndex?: number) => this.#finishOwned(row, response, logIndex),
    };
    this.#batch = new BatchSettlements({
      network: this.#network,
      chainId: this.#chainId,
      client: this.#client,
      ledger: this.ledger,
      signer: this.signer,
      blockTime: this.#blockTime,
      log: this.#log,
      policy: this.#policy,
      gasFloat: this.gasFloat,
      payerCode: this.#payerCode,
      contractPayers: this.#contractPayers,
      maxGas: options.maxBatchSettlementGas ?? DEFAULT_MAX_BATCH_SETTLEMENT_GAS,
      claimGasPerVoucher: options.maxClaimGasPerVoucher ?? DEFAULT_MAX_CLAIM_GAS_PER_VOUCHER,
      sdkVerify,
      ...afterClaim,
    });
    this.#permit2 = new Permit2Payments({
      network: this.#network,
      chainId: this.#chainId,
      client: this.#client,
      ledger: this.ledger,
      signer: this.signer,
      blockTime: this.#blockTime,
      log: this.#log,
      policy: this.#policy,
      gasFloat: this.gasFloat,
      payerCode: this.#payerCode,
      contractPayers: this.#contractPayers,
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

  /** Off-chain checks plus a simulation; no state is written. Throws ChainUnavailableError when the RPC does not answer. */
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    return this.#observed('verify', this.#verify(payload, requirements), (answer) => ({ ok: answer.isValid, reason: answer.invalidReason }));
  }

  async #verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    if (this.#batch.handles(payload, requirements)) return this.#batch.verify(payload, requirements);
    if (this.#permit2.handles(payload, requirements)) return this.#permit2.verify(payload, requirements);
    const pre = precheck(this.#network, payload, requirements);
    if (!pre.ok) return { isValid: false, invalidReason: pre.reason, invalidMessage: pre.message, payer: pre.payer };
    const refused = this.#policy?.terms(pre.key.payer, requirements);
    if (refused) return { isValid: false, invalidReason: refused.reason, invalidMessage: refused.message, payer: pre.key.payer };
    const outOfBounds = await this.#timeBounds(pre.eip3009, requirements);
    if (outOfBounds) return { isValid: false, invalidReason: outOfBounds.reason, invalidMessage: outOfBounds.message, payer: pre.key.payer };
    const payer = pre.eip3009.authorization.from;
    const [quick, withCode] = await Promise.all([this.#quick(payload, requirements, pre.eip3009), this.#payerHasCode(getAddress(pre.key.payer))]);
    if (quick === 'used' || (quick === 'valid' && this.#inflight.has(keyString(pre.key)))) return alreadyUsed(payer);
    if (withCode) return this.#verifyContractPayer(pre.key, payload, requirements, pre.eip3009);
    if (quick === 'valid') return { isValid: true, payer };
    return this.#schemeVerify(pre.key, payload, requirements);
  }

  /**
   * A payer with code checks the signature with its own code, at our gas: refused unless the operator allows
   * contract payers, and then valid only when the settlement fits under the gas ceiling.
   */
  async #verifyContractPayer(key: SettlementKey, payload: PaymentPayload, requirements: PaymentRequirements, eip3009: Eip3009Payload): Promise<VerifyResponse> {
    if (this.#contractPayers === 'refuse') {
      return { isValid: false, invalidReason: Reason.payerHasCode, invalidMessage: ownWords(Reason.payerHasCode), payer: key.payer };
    }
    const verdict = await this.#schemeVerify(key, payload, requirements);
    if (!verdict.isValid) return verdict;
    try {
      await gasWithin(this.#client, { account: this.#relayers.addresses[0]!, to: getAddress(requirements.asset), data: settlementCallData(eip3009) }, this.#maxSettleGas);
    } catch (error) {
      if (isTransportError(error)) throw new ChainUnavailableError(error);
      const reason = error instanceof GasCeilingError ? Reason.gasOverCeiling : Reason.simulationFailed;
      return { isValid: false, invalidReason: reason, invalidMessage: ownWords(reason), payer: key.payer };
    }
    return verdict;
  }

  async #payerHasCode(payer: Address): Promise<boolean> {
    try {
      return await this.#payerCode.hasCode(payer);
    } catch (error) {
      throw isTransportError(error) ? new ChainUnavailableError(error) : error;
    }
  }

  /**
   * Settles once per authorization. Failures come back as `success: false` with a reason; a
   * `settlement_pending` answer means the transaction may be in flight (retry the same settle).
   * Throws ChainUnavailableError only when nothing can have been broadcast.
   */
  settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    return this.#observed('settle', this.#settle(payload, requirements), (answer) => ({ ok: answer.success, reason: answer.errorReason }));
  }

  /** Logs (debug) and reports each answer: the line carries the request id of the call it answers. */
  async #observed<T>(operation: 'verify' | 'settle', answering: Promise<T>, outcome: (answer: T) => { ok: boolean; reason?: string }): Promise<T> {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const answer = await answering;
      const { ok, reason } = outcome(answer);
      this.#log.debug({ operation, ok, reason, ms: Math.round(seconds() * 1000) }, `${operation} answered`);
      this.#observer?.answered(operation, { ok, reason }, seconds());
      return answer;
    } catch (error) {
      this.#log.debug({ operation, err: error, ms: Math.round(seconds() * 1000) }, `${operation} failed`);
      this.#observer?.answered(operation, 'error', seconds());
      throw error;
    }
  }

  async #settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    if (this.#batch.handles(payload, requirements)) return this.#batch.settle(payload, requirements);
    if (this.#permit2.handles(payload, requirements)) return this.#permit2.settle(payload, requirements);
    const pre = precheck(this.#network, payload, requirements);
    if (!pre.ok) return failure(requirements.network, pre.reason, pre.message, pre.payer);
    const refused = this.#policy?.terms(pre.key.payer, requirements);
    if (refused) return failure(requirements.network, refused.reason, refused.message, pre.key.payer);
    const paymentId = paymentIdOf(payload);
    if (!paymentId.ok) return failure(requirements.network, Reason.invalidPayload, paymentId.message, pre.key.payer);
    // Out of its time window by the chain's clock: refused, unless we hold its row (retries and copies are answered from it).
    const outOfBounds = await this.#timeBounds(pre.eip3009, requirements);
    if (outOfBounds && !(await this.ledger.find(pre.key))) return failure(requirements.network, outOfBounds.reason, outOfBounds.message, pre.key.payer);
    const id = keyString(pre.key);
    const running = this.#inflight.get(id);
    if (running) {
      await running.catch(() => undefined);
      return this.#settle(payload, requirements);
    }
    const call: SettleCall = {
      key: pre.key,
      payloadHash: payloadHashOf(pre.key, requirements, pre.eip3009),
      paymentId: paymentId.id,
      eip3009: pre.eip3009,
      request: { payload, requirements },
    };
    const settling = this.#settleKey(call, payload, requirements);
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
        if ((await this.reconcile(row)) || (await this.#executeOrphan(row))) resolved += 1;
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

  /**
   * A claim whose node died before sending anything would block the payment until validBefore: once its
   * owner's lease has lapsed (database time), it is taken over and executed from the request stored with
   * it. Nobody is answered here; the success waits for the owner's retry (disowned). Sending twice is
   * harmless if the dead node did send after all: the token executes one authorization once.
   */
  async #executeOrphan(row: SettlementRow): Promise<boolean> {
    // A batch-settlement claim row is one of several in one transaction: never re-executed alone (reconciled from the chain).
    if (row.status !== 'claimed' || row.txHash || !row.request || row.kind === 'batch-claim') return false;
    const asked = performance.now();
    const taken = await this.ledger.takeOver(keyOf(row), this.#ownerLeaseMs, crypto.randomUUID());
    if (!taken) return false;
    const { payload, requirements } = row.request as SettleRequest;
    this.#log.info({ nonce: row.nonce, payer: row.payer }, 'settlement claim taken over from a node that died before sending');
    await this.#execute(taken, payload, requirements, { claimAskedAt: asked }, 'nobody');
    return true;
  }

  async #settleKey(call: SettleCall, payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const { key } = call;
    // A payment-identifier names one payload: its retry resumes that payload's row, another payload is a conflict.
    if (call.paymentId) {
      const named = await this.ledger.findByPaymentId(key.payer, call.paymentId);
      if (named && (keyString(named) !== keyString(key) || named.payloadHash !== call.payloadHash)) return idConflict(requirements.network, key.payer);
      if (named) return this.#resume(named, call);
    }
    // Only a payment the payer really signed gets a row: a forged payload must not block the real one. A
    // payer with code never takes the quick path (its signature check runs its code, at our gas).
    const [quick, withCode] = await Promise.all([this.#quick(payload, requirements, call.eip3009), this.#payerHasCode(getAddress(key.payer))]);
    const simulated = quick === 'valid' && !withCode;
    if (!simulated) {
      const existing = await this.ledger.find(key);
      if (existing) return this.#resume(existing, call);
      if (quick === 'used') return this.#settleUsed(call, requirements);
      const verdict = withCode ? await this.#verifyContractPayer(key, payload, requirements, call.eip3009) : await this.#schemeVerify(key, payload, requirements);
      if (!verdict.isValid) {
        return failure(requirements.network, verdict.invalidReason ?? Reason.invalidPayload, verdict.invalidMessage ?? 'invalid payment', verdict.payer ?? key.payer);
      }
    }
    // A new claim is about to spend gas: the float and the budgets decide first (both throw: nothing sent).
    await this.gasFloat.require('own');
    await this.#policy?.charge(key.payer, requirements.payTo);
    const fromBlock = await this.#client.getBlockNumber({ cacheTime: 2_000 }).catch(() => 0n);
    const asked = performance.now();
    const claim = await this.#claim(call, requirements, fromBlock - 5n);
    if (claim.kind === 'id_conflict') return idConflict(requirements.network, key.payer);
    if (claim.kind === 'exists') return this.#resume(claim.row, call);
    crashPoint('settle.after-claim');
    return this.#execute(claim.row, payload, requirements, { claimAskedAt: asked, simulated });
  }

  #claim(call: SettleCall, requirements: PaymentRequirements, fromBlock: bigint) {
    return this.ledger.claim({
      ...call.key,
      payTo: getAddress(requirements.payTo),
      amount: requirements.amount,
      validBefore: call.eip3009.authorization.validBefore,
      signature: call.eip3009.signature,
      payloadHash: call.payloadHash,
      paymentId: call.paymentId,
      claimToken: crypto.randomUUID(),
      fromBlock: Number(fromBlock > 0n ? fromBlock : 0n),
      request: call.request,
    });
  }

  /**
   * The token says the authorization is used and we never settled it: someone else's transaction
   * executed it (a front-run between verify and settle). If that transaction moved exactly this
   * payment to payTo, the payment is made: we record it and answer its one success. Nothing is sent.
   */
  async #settleUsed(call: SettleCall, requirements: PaymentRequirements): Promise<SettleResponse> {
    const { key, eip3009 } = call;
    const used = () => failure(requirements.network, Reason.nonceAlreadyUsed, 'the authorization is already used or canceled', key.payer);
    const auth = eip3009.authorization;
    if (getAddress(auth.to) !== getAddress(requirements.payTo) || BigInt(auth.value) !== BigInt(requirements.amount)) return used();
    // Only the payer's own signature over these terms may claim the execution (not a forged copy of its nonce).
    if (!(await this.#signedByPayer(eip3009, requirements))) return used();
    const latest = await this.#client.getBlockNumber({ cacheTime: 2_000 });
    const claim = await this.#claim(call, requirements, latest - FRONT_RUN_LOOKBACK_BLOCKS);
    if (claim.kind === 'id_conflict') return idConflict(requirements.network, key.payer);
    if (claim.kind === 'exists') return this.#resume(claim.row, call);
    let verdict: Awaited<ReturnType<typeof settlementVerdict>>;
    try {
      verdict = await settlementVerdict(this.#client, claim.row, this.#blockTime);
    } catch (error) {
      await this.ledger.release(key, claim.row.claimToken);
      throw isTransportError(error) ? new ChainUnavailableError(error) : error;
    }
    if (verdict.kind !== 'settled') {
      await this.ledger.release(key, claim.row.claimToken);
      return used();
    }
    this.#log.info({ nonce: key.nonce, payer: key.payer, tx: verdict.txHash }, 'authorization executed by another transaction; recorded as settled');
    return this.#finishOwned(claim.row, success(claim.row, verdict.txHash), verdict.logIndex);
  }

  async #signedByPayer(eip3009: Eip3009Payload, requirements: PaymentRequirements): Promise<boolean> {
    const extra = requirements.extra as { name?: unknown; version?: unknown };
    if (typeof extra.name !== 'string' || typeof extra.version !== 'string') return false;
    const auth = eip3009.authorization;
    try {
      return await this.#client.verifyTypedData({
        address: getAddress(auth.from),
        domain: { name: extra.name, version: extra.version, chainId: this.#chainId, verifyingContract: getAddress(requirements.asset) },
        types: transferWithAuthorizationTypes,
        primaryType: 'TransferWithAuthorization',
        message: {
          from: getAddress(auth.from),
          to: getAddress(auth.to),
          value: BigInt(auth.value),
          validAfter: BigInt(auth.validAfter),
          validBefore: BigInt(auth.validBefore),
          nonce: auth.nonce as Hash,
        },
        signature: eip3009.signature as Hash,
      });
    } catch (error) {
      if (isTransportError(error)) throw new ChainUnavailableError(error);
      return false;
    }
  }

  /**
   * `claimAskedAt`: when this call asked for its claim (performance.now(), before the statement). A takeover
   * needs the claim's lease lapsed by the database's clock, which started no earlier than that: until half
   * the lease has passed here, the claim is certainly still ours and the send skips asking the ledger.
   */
  async #execute(
    row: SettlementRow,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    { claimAskedAt, simulated = false }: { claimAskedAt: number; simulated?: boolean },
    answer: 'owner' | 'nobody' = 'owner',
  ): Promise<SettleResponse> {
    const key = keyOf(row);
    const release = () => this.ledger.release(key, row.claimToken);
    const attempt: SettleAttempt = {
      key,
      signature: row.signature,
      ledger: this.ledger,
      claimToken: row.claimToken,
      surelyOwnedUntil: claimAskedAt + this.#ownerLeaseMs / 2,
      // Just simulated (an EOA on a registered token: the token's own code, bounded): sent at the ceiling.
      gasLimit: simulated ? this.#maxSettleGas : undefined,
      recorded: false,
      uncertain: false,
    };
    const call = newCallContext(attempt);
    let result: SettleResponse;
    try {
      // Plainly valid (just simulated with a 65-byte signature): sent as is. Anything else: the SDK's settle, which re-verifies.
      result = await runInCall(call, () =>
        simulated
          ? this.#settleSimulated(payload, requirements, this.#maxSettleGas)
          : row.kind.startsWith('permit2-')
            ? this.#permit2.send(row, payload, requirements)
            : row.kind.startsWith('batch-')
              ? this.#batch.send(row, payload, requirements)
              : this.#sdk.settle(payload, requirements),
      );
      if (!result.success) result = { ...result, errorMessage: ownWords(result.errorReason) };
      crashPoint('settle.after-receipt');
    } catch (error) {
      if (!attempt.txHash) await release();
      else await this.ledger.disown(key, row.claimToken);
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
      await this.ledger.disown(key, row.claimToken);
      return failure(row.network, Reason.settlementPending, 'transaction sent; outcome not known yet, retry the same settle', row.payer, attempt.txHash ?? result.transaction);
    }
    if (!attempt.txHash && (call.rpcFailure || call.sendFailure)) {
      // Nothing was sent and the payment is not at fault: free the claim so a retry can settle it.
      await release();
      throw new ChainUnavailableError(call.rpcFailure ?? call.sendFailure);
    }
    // The SDK's own success is not trusted alone: only this authorization's paired transfer pays.
    let transferLogIndex: number | undefined;
    if (attempt.txHash && attempt.receipt) {
      const verdict = judgeRowReceipt(row, attempt.receipt);
      result = verdict.ok ? success(row, attempt.txHash) : failure(row.network, verdict.reason, verdict.message, row.payer, attempt.txHash);
      if (verdict.ok) transferLogIndex = verdict.logIndex;
    } else if (result.success) {
      result = failure(row.network, Reason.transferEventMismatch, 'no receipt to judge the settlement by', row.payer, result.transaction);
    }
    if (attempt.receipt) this.#observer?.gasSpent?.(attempt.receipt.gasUsed / BigInt(this.batcher.callsIn(attempt.receipt.transactionHash)), result.success ? 'settled' : 'failed');
    if (!result.success) {
      // Another transaction may have executed the authorization first (a front-run): that pays too.
      const verdict = await settlementVerdict(this.#client, { ...row, txHash: attempt.txHash ?? (result.transaction || null) }, this.#blockTime).catch(() => null);
      if (verdict?.kind === 'settled') {
        result = success(row, verdict.txHash);
        transferLogIndex = verdict.logIndex;
      } else if (attempt.receipt && isBatch(attempt.receipt)) {
        result = await this.#batchCallFailure(row, payload, requirements, attempt.txHash!);
      }
    }
    return this.#finishOwned(row, result, transferLogIndex, answer);
  }

  /**
   * The settle of a payment the quick check has just simulated (an EOA's 65-byte signature, every check
   * passed on chain): its transferWithAuthorization goes to the batcher as is, without the SDK's second
   * verify (a JavaScript signature recovery per payment). Answers as the SDK's settle would; #execute
   * judges the receipt by this authorization's own logs either way.
   */
  async #settleSimulated(payload: PaymentPayload, requirements: PaymentRequirements, gas: bigint): Promise<SettleResponse> {
    const eip3009 = payload.payload as unknown as Eip3009Payload;
    const payer = getAddress(eip3009.authorization.from);
    const network = requirements.network;
    let hash: Hash;
    try {
      // A payer with code checks the signature with its own code, with all the gas a batch forwards: alone.
      const code = await this.signer.getCode({ address: payer });
      const alone = hasCode(code) || currentCall()?.rpcFailure !== undefined;
      hash = await this.signer.sendSettlement({ to: getAddress(requirements.asset), data: transferWithAuthorizationData(eip3009), gas, payer, alone });
    } catch {
      // #execute tells apart what this was from the call context (taken over, uncertain, nothing sent).
      return failure(network, Reason.transactionFailed, 'settlement transaction not sent', payer);
    }
    let receipt: { status: string };
    try {
      receipt = await this.signer.waitForTransactionReceipt({ hash });
    } catch (error) {
      return failure(network, Reason.settlementPending, error instanceof Error ? error.message.split('\n')[0]! : 'receipt not seen yet', payer, hash);
    }
    return receipt.status === 'success' ? { success: true, transaction: hash, network, payer } : failure(network, Reason.transactionFailed, 'settlement transaction reverted', payer, hash);
  }

  /**
   * This authorization's call failed inside a batch that mined (the others' did not fail with it), and no
   * other transaction used it: nothing moved. The payment is checked again for the reason to give.
   */
  async #batchCallFailure(row: SettlementRow, payload: PaymentPayload, requirements: PaymentRequirements, txHash: Hash): Promise<SettleResponse> {
    const verdict = await this.#schemeVerify(keyOf(row), payload, requirements).catch(() => null);
    if (verdict && !verdict.isValid) return failure(row.network, verdict.invalidReason ?? Reason.transactionFailed, verdict.invalidMessage ?? 'invalid payment', row.payer, txHash);
    return failure(row.network, Reason.transactionFailed, 'its call in the settlement batch failed; nothing moved', row.payer, txHash);
  }

  /**
   * Another call owns (or owned) this payment: wait for its outcome, resolving it from the chain if
   * need be. A copy gets `success: true` only if nobody ever got it and the owner is gone (it
   * answered pending, or its node died).
   */
  async #resume(row: SettlementRow, call: Pick<SettleCall, 'payloadHash' | 'paymentId'>): Promise<SettleResponse> {
    if (row.payloadHash !== call.payloadHash) {
      return failure(row.network, nonceUsedReason(row), 'this authorization nonce belongs to another payment', row.payer, row.txHash ?? '');
    }
    const deadline = Date.now() + this.#joinWaitMs;
    let current: SettlementRow | null = row;
    while (current && (current.status === 'claimed' || current.status === 'broadcast')) {
      if (await this.#executeOrphan(current)) {
        current = await this.ledger.find(keyOf(row));
        continue;
      }
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
    // A retry with the owner's payment-identifier is answered like any other copy: the stored success
    // only while nobody has had it (the owner said pending, or died), else nonce_already_used naming
    // the transaction. Handing it out again would let one payment buy a response per copy.
    return this.#answer(current, { leaseMs: this.#ownerLeaseMs, paymentId: call.paymentId });
  }

  /** The claiming settle's answer: its outcome, unless a front-run or a stranger's retry was answered first. */
  async #finishOwned(row: SettlementRow, response: SettleResponse, transferLogIndex?: number, answer: 'owner' | 'nobody' = 'owner'): Promise<SettleResponse> {
    const final = await this.ledger.finish(keyOf(row), { status: response.success ? 'settled' : 'failed', response, transferLogIndex });
    if (final.txHash && this.batcher.isBatch(final.txHash as Hash)) crashPoint('batch.after-some-rows');
    crashPoint('settle.after-commit');
    if (answer === 'nobody') {
      await this.ledger.disown(keyOf(row), row.claimToken);
      return final.response as SettleResponse;
    }
    return this.#answer(final, { claimToken: row.claimToken });
  }

  /** A final row's answer to one caller: failures as stored; the one success to whoever wins it. */
  async #answer(row: SettlementRow, by: Answerer): Promise<SettleResponse> {
    const response = row.response as SettleResponse;
    if (row.status !== 'settled' || (await this.ledger.answerSuccess(keyOf(row), by))) return response;
    return failure(row.network, nonceUsedReason(row), `the authorization was already settled in ${response.transaction} and that settlement was answered`, row.payer, response.transaction);
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
    return result.isValid ? result : { ...result, invalidMessage: ownWords(result.invalidReason) };
  }

  /** bounds.ts's window check at the chain's time (on the devchain, brought up to the wall clock first). */
  async #timeBounds(eip3009: Eip3009Payload, requirements: PaymentRequirements): Promise<Refusal | null> {
    try {
      return timeBounds(requirements, eip3009, await this.#blockTime());
    } catch (error) {
      throw isTransportError(error) ? new ChainUnavailableError(error) : error;
    }
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

/**
 * Resolves one open row from the chain alone (the receipt of its hash, else the authorization's state and
 * log, pinned to one block) and records the outcome; null while undecidable. It sends nothing, so a node
 * without a relayer key runs it too (chain-reconciler.ts).
 */
export async function reconcileFromChain(
  deps: { client: PublicClient; ledger: SettlementLedger; blockTime: BlockClock; log: Logger },
  row: SettlementRow,
): Promise<SettlementRow | null> {
  const verdict = await settlementVerdict(deps.client, row, deps.blockTime);
  if (verdict.kind === 'pending') return null;
  const response = verdict.kind === 'settled' ? success(row, verdict.txHash) : failure(row.network, verdict.reason, verdict.message, row.payer, verdict.txHash ?? '');
  const final = await deps.ledger.finish(keyOf(row), { status: verdict.kind, response, transferLogIndex: verdict.kind === 'settled' ? verdict.logIndex : undefined });
  deps.log.info({ nonce: row.nonce, payer: row.payer, status: final.status, tx: final.txHash }, 'settlement reconciled from chain');
  return final;
}

const success = settledBy;

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

/** A Multicall3 transaction: a batch of settlements (batcher.ts), each call judged by its own logs. */
const isBatch = (receipt: TransactionReceipt) => receipt.to?.toLowerCase() === MULTICALL3_ADDRESS.toLowerCase();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
