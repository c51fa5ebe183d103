// One relayer key's nonce lane. Nonces stay correct under concurrent settles: gas is estimated by the
// callers in parallel, but nonce assignment, signing and eth_sendRawTransaction run one at a time in
// the lane's queue (a send to anvil takes about a millisecond). Signing locally means the hash is
// known even when the send's answer is lost.
//
// The lane also watches what it sent until it is mined. A transaction still unmined `replaceAfterMs`
// after its last send is stuck (fees too low for the chain now): it is signed again at the same
// nonce with fees raised by at least 12.5 % (the node's replacement rule) and never below the
// market, up to `maxReplacements` times. Whichever version mines is the settlement: each new hash
// goes to the caller's onReplaced (the ledger), and the chain verdict also finds it by its logs. What fees
// a send or a replacement pays is fees.ts's.
import {
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
  WaitForTransactionReceiptTimeoutError,
  type Address,
  type Hash,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
} from 'viem';
import type { LocalAccount } from 'viem/accounts';
import { getTransaction, getTransactionCount, getTransactionReceipt, sendRawTransaction } from 'viem/actions';
import type { Logger } from 'pino';
import { isTransportError } from '../../chain/errors.js';
import { keccak256 } from '../../chain/keccak.js';
import { signTransaction } from '../../chain/sign-transaction.js';
import { definedOnly } from '../../platform/defined-only.js';
import { bumpFees, MarketFees, type Fees } from './fees.js';

export interface RelayerTx {
  to: Address;
  data: Hex;
  gas: bigint;
}

export interface SendOptions {
  /** Called with each replacement's hash (same nonce, higher fees), also after the caller stopped waiting. */
  onReplaced?(hash: Hash): Promise<void> | void;
}

export interface ReplacementPolicy {
  /** A sent transaction not mined this long after its last send is re-sent with higher fees. */
  replaceAfterMs: number;
  /** Replacements per transaction at most; after that it is left to the node (and shows in relayerStatus). */
  maxReplacements: number;
  /** How often the lane checks its unmined transactions. */
  pollMs: number;
}

export interface LaneOptions extends Partial<ReplacementPolicy> {
  /** Receipts and mined-nonce reads (may batch JSON-RPC); defaults to the send client. */
  reads?: PublicClient;
}

export const DEFAULT_REPLACEMENT: ReplacementPolicy = { replaceAfterMs: 20_000, maxReplacements: 5, pollMs: 500 };

/** The send's answer was lost: the transaction (this hash) may or may not be on its way. */
export class BroadcastUncertainError extends Error {
  constructor(
    readonly hash: Hash,
    cause: unknown,
  ) {
    super(`broadcast of ${hash} uncertain: ${cause instanceof Error ? cause.message.split('\n')[0] : String(cause)}`, { cause });
    this.name = 'BroadcastUncertainError';
  }
}

const NONCE_RESYNC = /nonce too low|nonce too high|already known|replacement transaction underpriced|invalid nonce/i;

/** A transaction of this lane not yet seen mined, with every hash it was sent under (oldest first). */
interface InFlight {
  nonce: number;
  tx: RelayerTx;
  fees: Fees;
  hashes: Hash[];
  /** The newest version as sent (its bytes: a KMS key signs differently each time, so it is never re-signed). */
  raw: Hex;
  firstSentAt: number;
  lastSentAt: number;
  /** Last time the same version was sent again because the node forgot it (never delays a replacement). */
  lastRefillAt: number;
  replacements: number;
  onReplaced?: SendOptions['onReplaced'];
  done: boolean;
  mined: Promise<void>;
  markMined: () => void;
  /** The one receipt wait every caller of this transaction shares (a batch has many callers). */
  waiting?: Promise<TransactionReceipt>;
}

// The soonest a lane looks for a transaction after its send (the devchain has mined it by then).
const FIRST_LOOK_MS = 5;
// Mined entries stay findable by any of their hashes for a while: a waiter may ask after the watch saw it mined.
const RECENT_LIMIT = 5_000;

export class RelayerSender {
  #queue: Promise<unknown> = Promise.resolve();
  #queued = 0;
  #nonce: number | null = null;
  readonly #inflight = new Map<number, InFlight>();
  readonly #byHash = new Map<Hash, InFlight>();
  readonly #recent = new Map<Hash, InFlight>();
  #timer: NodeJS.Timeout | null = null;
  #timerDue = 0;
  /** How long after its send the lane's last mined transaction was seen mined (pollMs until one was). */
  #minedAfterMs: number;
  #ticking = false; // one check at a time: two could both replace the same stuck transaction
  readonly #policy: ReplacementPolicy;
  readonly #reads: PublicClient;
  readonly #fees: MarketFees;

  constructor(
    readonly account: LocalAccount,
    /** Must not retry by itself: a blind resend after a lost answer is our decision, not the transport's. */
    private readonly client: PublicClient,
    private readonly chainId: number,
    options: LaneOptions = {},
    private readonly log?: Logger,
  ) {
    const { reads, ...policy } = options;
    this.#policy = { ...DEFAULT_REPLACEMENT, ...definedOnly(policy) };
    this.#minedAfterMs = this.#policy.pollMs;
    this.#reads = reads ?? client;
    this.#fees = new MarketFees(client);
  }

  get address(): Address {
    return this.account.address;
  }

  /** Sends waiting in the queue or being sent (signed, broadcast): the batcher's "sending". */
  get queued(): number {
    return this.#queued;
  }

  /** Sends waiting in the queue plus sent transactions not yet seen mined: what the pool balances on, and the batcher's idle test. */
  get busy(): number {
    return this.#queued + this.#inflight.size;
  }

  /** Sent transactions not yet seen mined, with how often each was replaced and when first sent (ms). */
  unmined(): Array<{ nonce: number; hashes: Hash[]; replacements: number; firstSentAt: number }> {
    return [...this.#inflight.values()].map((e) => ({ nonce: e.nonce, hashes: [...e.hashes], replacements: e.replacements, firstSentAt: e.firstSentAt }));
  }

  send(tx: RelayerTx, options: SendOptions = {}): Promise<Hash> {
    this.#queued += 1;
    const run = this.#enqueue(() => this.#send(tx, options)).finally(() => (this.#queued -= 1));
    return run;
  }

  /** Whether this lane sent (or replaced) the transaction with this hash and has not seen it mined. */
  tracks(hash: Hash): boolean {
    return this.#byHash.has(hash) || this.#recent.has(hash);
  }

  /** The newest hash of the transaction `hash` was one version of (itself when unknown or never replaced). */
  currentHash(hash: Hash): Hash {
    const entry = this.#byHash.get(hash) ?? this.#recent.get(hash);
    return entry ? entry.hashes[entry.hashes.length - 1] : hash;
  }

  /**
   * The receipt of whichever version of this transaction mines. Throws viem's receipt timeout after
   * `timeoutMs` (the lane keeps watching and replacing it in the background all the same).
   */
  waitMined(hash: Hash, timeoutMs: number): Promise<TransactionReceipt> {
    const entry = this.#byHash.get(hash) ?? this.#recent.get(hash);
    if (!entry) return Promise.reject(new WaitForTransactionReceiptTimeoutError({ hash }));
    if (entry.waiting) return entry.waiting;
    const waiting = this.#waitMined(entry, hash, timeoutMs);
    entry.waiting = waiting;
    // Shared while it runs; a later caller (after a timeout, say) starts its own.
    void waiting.catch(() => undefined).finally(() => entry.waiting === waiting && (entry.waiting = undefined));
    return waiting;
  }

  /** Settles when whichever version of this transaction mines (or at once when it is not this lane's). */
  whenMined(hash: Hash): Promise<void> {
    const entry = this.#byHash.get(hash) ?? this.#recent.get(hash);
    return entry ? entry.mined : Promise.resolve();
  }

  async #waitMined(entry: InFlight, hash: Hash, timeoutMs: number): Promise<TransactionReceipt> {
    // Automine answers at once: ask before waiting.
    const newest = await this.#receipt(entry.hashes[entry.hashes.length - 1]);
    if (newest) {
      this.#mined(entry);
      return newest;
    }
    const deadline = Date.now() + timeoutMs;
    if (!entry.done) {
      this.#watch();
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
      try {
        if ((await Promise.race([entry.mined, timedOut])) === 'timeout') throw new WaitForTransactionReceiptTimeoutError({ hash });
      } finally {
        clearTimeout(timer);
      }
    }
    // The nonce is used; the node may count it a moment before it serves the receipt.
    for (;;) {
      for (const version of [...entry.hashes].reverse()) {
        const receipt = await this.#receipt(version);
        if (receipt) return receipt;
      }
      // Still none by the deadline: the nonce went to a transaction not signed here (the same key elsewhere).
      if (Date.now() >= deadline) throw new WaitForTransactionReceiptTimeoutError({ hash });
      await new Promise((resolve) => setTimeout(resolve, Math.min(this.#policy.pollMs, 100)));
    }
  }

  #enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #send(tx: RelayerTx, options: SendOptions, resynced = false): Promise<Hash> {
    this.#nonce ??= await getTransactionCount(this.client, { address: this.account.address, blockTag: 'pending' });
    const nonce = this.#nonce;
    const fees = await this.#fees.current();
    const serialized = await this.#sign(tx, nonce, fees);
    const hash = keccak256(serialized);
    try {
      await sendRawTransaction(this.client, { serializedTransaction: serialized });
      this.#nonce = nonce + 1;
      this.#track(nonce, tx, fees, serialized, hash, options);
      return hash;
    } catch (error) {
      // Next send asks the node again: it knows whether this one arrived.
      this.#nonce = null;
      if (isTransportError(error)) throw new BroadcastUncertainError(hash, error);
      const message = error instanceof Error ? error.message : String(error);
      if (/already known/i.test(message)) {
        this.#track(nonce, tx, fees, serialized, hash, options);
        return hash;
      }
      if (!resynced && NONCE_RESYNC.test(message)) {
        // Our own earlier attempt of this very transaction may hold the nonce: then it is sent.
        if (await this.#known(hash)) return hash;
        return this.#send(tx, options, true); // another sender took the nonce; this one never went out
      }
      throw error;
    }
  }

  #sign(tx: RelayerTx, nonce: number, fees: Fees): Promise<Hex> {
    return signTransaction(this.account, { chainId: this.chainId, nonce, to: tx.to, data: tx.data, gas: tx.gas, ...fees });
  }

  /** `hash`: keccak256 of `raw`, already computed by the send (a batch's raw transaction is kilobytes to hash). */
  #track(nonce: number, tx: RelayerTx, fees: Fees, raw: Hex, hash: Hash, options: SendOptions): void {
    let markMined!: () => void;
    const mined = new Promise<void>((resolve) => (markMined = resolve));
    const entry: InFlight = { nonce, tx, fees, hashes: [hash], raw, firstSentAt: Date.now(), lastSentAt: Date.now(), lastRefillAt: 0, replacements: 0, onReplaced: options.onReplaced, done: false, mined, markMined };
    // A nonce reused after a resync: whatever was tracked under it never went out.
    const previous = this.#inflight.get(nonce);
    if (previous) this.#mined(previous);
    this.#inflight.set(nonce, entry);
    this.#byHash.set(hash, entry);
    this.#watch();
  }

  #mined(entry: InFlight): void {
    if (entry.done) return;
    entry.done = true;
    this.#minedAfterMs = Date.now() - entry.lastSentAt;
    if (this.#inflight.get(entry.nonce) === entry) this.#inflight.delete(entry.nonce);
    if (this.#recent.size + entry.hashes.length > RECENT_LIMIT) this.#recent.clear();
    for (const h of entry.hashes) {
      this.#byHash.delete(h);
      this.#recent.set(h, entry);
    }
    entry.markMined();
  }

  /**
   * Keeps a timer running while anything is unmined: marks what mined, replaces what is stuck. The next look is as many
   * ms after the newest send as have passed since it, at least half of how long the lane's last transaction took to be
   * seen mined, at most pollMs: within milliseconds on the devchain, every pollMs/2 to pollMs on a slow chain.
   */
  #watch(): void {
    if (this.#ticking || this.#inflight.size === 0) return;
    let newest = 0;
    for (const entry of this.#inflight.values()) newest = Math.max(newest, entry.lastSentAt);
    const soonest = Math.max(FIRST_LOOK_MS, this.#minedAfterMs / 2);
    const delay = Math.min(this.#policy.pollMs, Math.max(soonest, Date.now() - newest));
    // A send after the timer was set may want an earlier look than it.
    if (this.#timer && this.#timerDue <= Date.now() + delay) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerDue = Date.now() + delay;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#ticking = true;
      void this.#tick()
        .catch((error: unknown) => this.log?.warn({ err: error, relayer: this.address }, 'relayer lane check failed'))
        .finally(() => {
          this.#ticking = false;
          this.#watch();
        });
    }, delay);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    if (this.#inflight.size === 0) return;
    // One read per lane: every nonce below the mined count is settled, by whichever version.
    const [latest, pending] = await Promise.all([
      getTransactionCount(this.#reads, { address: this.account.address, blockTag: 'latest' }),
      getTransactionCount(this.#reads, { address: this.account.address, blockTag: 'pending' }),
    ]);
    // Everything mined first: the sends below wait in the lane's queue, and its waiters should not wait with them.
    for (const entry of [...this.#inflight.values()]) if (entry.nonce < latest) this.#mined(entry);
    const now = Date.now();
    for (const entry of [...this.#inflight.values()]) {
      // The node forgot it (evicted; an underpriced one it still holds is not counted as pending either, so
      // ask): every later nonce of this lane waits behind the gap, so it goes back in at once, replacements
      // used up or not.
      if (entry.nonce === pending && now - Math.max(entry.lastSentAt, entry.lastRefillAt) >= this.#policy.pollMs && !(await this.#known(entry.hashes.at(-1)!))) {
        await this.#enqueue(() => this.#refill(entry));
      }
      if (entry.nonce >= latest && now - entry.lastSentAt >= this.#policy.replaceAfterMs && entry.replacements < this.#policy.maxReplacements) {
        await this.#enqueue(() => this.#replace(entry));
      }
    }
  }

  /** Sends the newest version of a transaction the node no longer holds again, byte for byte (same hash). */
  async #refill(entry: InFlight): Promise<void> {
    if (entry.done) return;
    entry.lastRefillAt = Date.now();
    try {
      await sendRawTransaction(this.client, { serializedTransaction: entry.raw });
      this.log?.warn({ relayer: this.address, nonce: entry.nonce, tx: entry.hashes.at(-1) }, 'settlement transaction forgotten by the node: sent again');
    } catch (error) {
      // Mined or known meanwhile (the next check sees it), or refused: the next tick tries again.
      this.log?.warn({ err: error, relayer: this.address, nonce: entry.nonce }, 'forgotten settlement transaction: resend refused');
    }
  }

  /** Re-sends a stuck transaction at its nonce with higher fees (in the queue, like every send). */
  async #replace(entry: InFlight): Promise<void> {
    if (entry.done) return;
    this.#fees.forget();
    const fees = bumpFees(entry.fees, await this.#fees.current());
    const serialized = await this.#sign(entry.tx, entry.nonce, fees);
    const hash = keccak256(serialized);
    entry.replacements += 1;
    entry.lastSentAt = Date.now();
    try {
      await sendRawTransaction(this.client, { serializedTransaction: serialized });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (/nonce too low/i.test(message)) return; // a version already mined; the next check marks it
      if (!isTransportError(error) && !/already known/i.test(message)) {
        // Refused (e.g. still underpriced): the next attempt bumps from these fees.
        entry.fees = fees;
        this.log?.warn({ err: error, relayer: this.address, nonce: entry.nonce }, 'stuck settlement transaction: replacement refused');
        return;
      }
      // The answer was lost: this version may be on its way, so it is followed like a sent one.
    }
    entry.fees = fees;
    entry.raw = serialized;
    entry.hashes.push(hash);
    this.#byHash.set(hash, entry);
    this.log?.warn(
      { relayer: this.address, nonce: entry.nonce, replaced: entry.hashes[entry.hashes.length - 2], tx: hash, replacement: entry.replacements },
      'stuck settlement transaction replaced with higher fees',
    );
    try {
      await entry.onReplaced?.(hash);
    } catch (error) {
      // The chain verdict still finds whichever version mines by its AuthorizationUsed log.
      this.log?.warn({ err: error, tx: hash }, 'replacement hash not recorded');
    }
  }

  async #receipt(hash: Hash): Promise<TransactionReceipt | null> {
    try {
      return await getTransactionReceipt(this.#reads, { hash });
    } catch (error) {
      if (error instanceof TransactionReceiptNotFoundError) return null;
      throw error;
    }
  }

  async #known(hash: Hash): Promise<boolean> {
    try {
      await getTransaction(this.client, { hash });
      return true;
    } catch (error) {
      if (error instanceof TransactionNotFoundError) return false;
      throw new BroadcastUncertainError(hash, error);
    }
  }
}
