// Batched settlement: settles that arrive together leave as one Multicall3 `aggregate3` transaction per
// relayer lane, each call with `allowFailure: true`, so one failing authorization never fails the others.
// A batch closes at `maxCalls` calls, at `maxGas`, or `waitMs` after its first call (a lone settle waits
// no longer than that, and goes out as a plain transaction). With `idle: 'send'` (the default) a call that
// finds the whole pool with nothing to send and nothing sent unmined leaves at once; otherwise it waits for company
// (Nagle's rule: held while earlier data is unacknowledged, the acknowledgement here being the block), and the
// open batch leaves as soon as its lane has sent what it was sending, or waitMs after its first call. A settle on
// an idle pool is never delayed, one beside an unmined transaction at most waitMs; under load batches grow with
// the load. The pool's load, not a lane's: new payers join the fullest open batch, so one batch fills at a time
// whatever the number of keys, and the keys carry batches side by side. (Idle judged per lane sent 85 % of the
// transactions with one call each on the devchain with 4 keys: each transaction costs gas and CPU, bench/RESULTS.md.)
// Everything after the send is the lane's (nonce, replacement with higher fees) and each caller's (ledger rows, its own
// logs in the receipt):
// every caller gets the batch's hash, and its outcome is its own AuthorizationUsed/Transfer pair.
//
// Why the gas is the sum of the calls' own limits and not eth_estimateGas of the batch: with allowFailure,
// the node's estimate is the least gas at which the batch does not revert, and an inner call that runs
// out of gas does not revert it: the estimate would starve the calls it is meant to pay for.
//
// A payer's settles stay on one lane until they are mined: on one lane they execute in the order they
// were accepted (nonce order), so when a payer's balance covers only some of its payments, the ones it
// made first are the ones paid, as without batching. Calls marked `alone` (a payer with code, whose
// signature check runs its code with all the gas Multicall3 forwards) never share a transaction.
import { encodeFunctionData, type Hash } from 'viem';
import type { Logger } from 'pino';
import { aggregate3Fn, MULTICALL3_ADDRESS } from '../../chain/multicall3.js';
import { crashPoint } from '../../platform/crash-points.js';
import type { RelayerPool } from './relayer-pool.js';
import type { RelayerSender, RelayerTx, SendOptions } from './sender.js';

export interface BatchPolicy {
  /** Calls per batch at most; 1 turns batching off. */
  maxCalls: number;
  /** How long an open batch waits for more calls after its first. */
  waitMs: number;
  /** A batch closes before its calls' gas limits add up past this (stay well under the block gas limit). */
  maxGas: bigint;
  /**
   * 'send': a call finding every lane idle (nothing to send, nothing unmined) leaves at once, an open batch as soon
   * as its lane has sent what it was sending (or at waitMs);
   * 'wait': every batch is held `waitMs` for company (fuller batches, so less gas per payment, each settle later).
   */
  idle: 'send' | 'wait';
}

// The measured setting (bench/RESULTS.md, batched settlement): see FACILITATOR_BATCH_MAX_CALLS in ./settings.ts.
export const DEFAULT_BATCH: BatchPolicy = { maxCalls: 64, waitMs: 10, maxGas: 12_000_000n, idle: 'send' };

// The transaction itself, and per call Multicall3's loop, the call's calldata and its result copy.
const BATCH_BASE_GAS = 40_000n;
const PER_CALL_GAS = 15_000n;

export interface BatchCallOptions extends SendOptions {
  /** Whose authorization this is: a payer's calls stay on one lane until mined. */
  payer: string;
  /** Never shares a transaction (see the header). */
  alone?: boolean;
  /** Only this relayer key may send it (an upto permit names its facilitator, the proxy checks msg.sender): sent alone on its lane. */
  lane?: string;
}

interface Member {
  tx: RelayerTx;
  options: BatchCallOptions;
  resolve(hash: Hash): void;
  reject(error: unknown): void;
}

interface OpenBatch {
  lane: RelayerSender;
  members: Member[];
  gas: bigint;
  timer: NodeJS.Timeout;
}

export class SettlementBatcher {
  readonly #open = new Map<RelayerSender, OpenBatch>();
  /** Lanes holding a payer's calls not yet mined, with how many. */
  readonly #payerLanes = new Map<string, { lane: RelayerSender; calls: number }>();
  /** Hashes of multi-call batches this process sent (their callers share one receipt), with their call counts. */
  readonly #batchHashes = new Map<Hash, number>();

  constructor(
    private readonly pool: RelayerPool,
    readonly policy: BatchPolicy = DEFAULT_BATCH,
    private readonly log?: Logger,
  ) {}

  /** Sends `tx` in the next batch of a lane; resolves with the hash of the transaction that carries it. */
  send(tx: RelayerTx, options: BatchCallOptions): Promise<Hash> {
    const payer = options.payer.toLowerCase();
    const named = options.lane === undefined ? undefined : this.pool.lanes.find((l) => l.address.toLowerCase() === options.lane!.toLowerCase());
    if (options.lane !== undefined && !named) return Promise.reject(new Error(`relayer ${options.lane} is not in this pool`));
    const lane = named ?? this.#payerLanes.get(payer)?.lane ?? (options.alone ? this.#laneForAlone() : this.#laneForNewPayer());
    this.#hold(payer, lane);
    const sent = new Promise<Hash>((resolve, reject) => {
      const member: Member = { tx, options, resolve, reject };
      if (options.alone || named || this.policy.maxCalls <= 1) {
        // The lane's open batch may hold this payer's earlier calls: it goes first, so they keep their order.
        const open = this.#open.get(lane);
        if (open) this.#close(open);
        return void this.#sendAlone(lane, member);
      }
      let batch = this.#open.get(lane);
      if (batch && batch.gas + tx.gas > this.policy.maxGas) {
        this.#close(batch);
        batch = undefined;
      }
      if (!batch) {
        if (this.policy.idle === 'send' && this.#poolIdle()) return void this.#sendAlone(lane, member);
        batch = { lane, members: [], gas: 0n, timer: setTimeout(() => this.#close(batch!), this.policy.waitMs).unref() };
        this.#open.set(lane, batch);
      }
      batch.members.push(member);
      batch.gas += tx.gas;
      if (batch.members.length >= this.policy.maxCalls) this.#close(batch);
    });
    sent.then(
      (hash) => void (this.pool.whenMined(hash) ?? Promise.resolve()).then(() => this.#release(payer)),
      () => this.#release(payer),
    );
    return sent;
  }

  /** Whether this hash is a batch of several calls this process sent (or a replacement of one). */
  isBatch(hash: Hash): boolean {
    return this.#batchHashes.has(hash);
  }

  /** How many settlement calls the transaction `hash` carries (1 unless it is a batch this process sent). */
  callsIn(hash: Hash): number {
    return this.#batchHashes.get(hash) ?? 1;
  }

  /** The lane whose open batch has the most calls, else the pool's least busy (on an idle pool the call leaves at once). */
  #laneForNewPayer(): RelayerSender {
    return this.#fillingLane() ?? this.pool.pickLane();
  }

  /** The pool's pick, unless a batch is open there (an alone call would send it before its company came): a free lane. */
  #laneForAlone(): RelayerSender {
    const picked = this.pool.pickLane();
    if (!this.#open.has(picked)) return picked;
    return this.pool.lanes.filter((lane) => !this.#open.has(lane)).sort((a, b) => a.busy - b.busy)[0] ?? picked;
  }

  /** No batch open and no lane with anything queued or unmined: no company is coming for a call now. */
  #poolIdle(): boolean {
    return this.#open.size === 0 && this.pool.lanes.every((lane) => lane.busy === 0);
  }

  /** The lane of the fullest open batch, leaving out lanes with sends waiting behind the one on the wire (a slow node). */
  #fillingLane(): RelayerSender | undefined {
    let best: OpenBatch | undefined;
    for (const batch of this.#open.values()) {
      if (batch.lane.queued <= 1 && (!best || batch.members.length > best.members.length)) best = batch;
    }
    return best?.lane;
  }

  #close(batch: OpenBatch): void {
    if (this.#open.get(batch.lane) !== batch) return;
    this.#open.delete(batch.lane);
    clearTimeout(batch.timer);
    if (batch.members.length === 1) return void this.#sendAlone(batch.lane, batch.members[0]!);
    void this.#sendBatch(batch);
  }

  async #sendAlone(lane: RelayerSender, member: Member): Promise<void> {
    try {
      member.resolve(await lane.send(member.tx, { onReplaced: member.options.onReplaced }));
    } catch (error) {
      member.reject(error);
    } finally {
      this.#sent(lane);
    }
  }

  /** One of this batcher's sends on `lane` is done: with idle 'send', a batch that was waiting for the lane leaves. */
  #sent(lane: RelayerSender): void {
    if (this.policy.idle !== 'send' || lane.queued > 0) return;
    const batch = this.#open.get(lane);
    if (batch) this.#close(batch);
  }

  async #sendBatch(batch: OpenBatch): Promise<void> {
    const { members } = batch;
    const data = encodeFunctionData({ ...aggregate3Fn, args: [members.map((m) => ({ target: m.tx.to, allowFailure: true, callData: m.tx.data }))] });
    // Multicall3 forwards 63/64 of what is left to each call: the calls' own limits, plus that margin, plus its own cost.
    const gas = (batch.gas * 64n) / 63n + BATCH_BASE_GAS + PER_CALL_GAS * BigInt(members.length);
    const onReplaced = async (replacement: Hash) => {
      this.#remember(replacement, members.length);
      // Every call's row follows the new hash; one failing write must not keep the others from theirs.
      const written = await Promise.allSettled(members.map((m) => m.options.onReplaced?.(replacement)));
      const failed = written.find((w) => w.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
    };
    let hash: Hash;
    try {
      hash = await batch.lane.send({ to: MULTICALL3_ADDRESS, data, gas }, { onReplaced });
    } catch (error) {
      for (const m of members) m.reject(error);
      return;
    } finally {
      this.#sent(batch.lane);
    }
    this.#remember(hash, members.length);
    this.log?.debug({ relayer: batch.lane.address, tx: hash, calls: members.length }, 'settlement batch sent');
    crashPoint('batch.after-broadcast');
    for (const m of members) m.resolve(hash);
  }

  #remember(hash: Hash, calls: number): void {
    if (this.#batchHashes.size >= 10_000) this.#batchHashes.clear();
    this.#batchHashes.set(hash, calls);
  }

  #hold(payer: string, lane: RelayerSender): void {
    const held = this.#payerLanes.get(payer);
    if (held) held.calls += 1;
    else this.#payerLanes.set(payer, { lane, calls: 1 });
  }

  #release(payer: string): void {
    const held = this.#payerLanes.get(payer);
    if (held && (held.calls -= 1) <= 0) this.#payerLanes.delete(payer);
  }
}
