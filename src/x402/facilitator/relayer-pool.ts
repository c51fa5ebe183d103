// The facilitator's relayer keys, one nonce lane each (sender.ts). Settles run in parallel across
// lanes: each send goes to the least-busy lane (queued sends plus unmined transactions; ties go
// round the pool), and within a lane nonces stay gapless because only that lane's queue assigns them.
import type { Address, Hash, PublicClient, TransactionReceipt } from 'viem';
import type { LocalAccount } from 'viem/accounts';
import type { Logger } from 'pino';
import { definedOnly } from '../../platform/defined-only.js';
import { DEFAULT_REPLACEMENT, RelayerSender, type RelayerTx, type ReplacementPolicy, type SendOptions } from './sender.js';

export interface RelayerStatus {
  address: string;
  balanceWei: string;
  /** The next nonce: the node's `pending` count, or past this lane's own unmined sends if higher (anvil leaves an underpriced one out). */
  pendingNonce: number;
  /** Transactions mined from this key (`latest`). */
  latestNonce: number;
  /** pendingNonce − latestNonce: sent, not yet mined. */
  gap: number;
  /** The balance is below the pool's low-gas threshold. */
  lowGas: boolean;
  /** Seconds since this lane's oldest unmined transaction was first sent (0 when none). */
  oldestUnminedSeconds: number;
  /** That transaction outlived every replacement and refill (stuckAfterMs): the lane's later settles wait behind it. */
  stuck: boolean;
}

/** 0.01 ETH: about 65 settlements at 1 gwei (transferWithAuthorization uses ~60–85k gas), hours at L2 prices. */
export const DEFAULT_LOW_GAS_WEI = 10n ** 16n;

export interface RelayerPoolOptions {
  accounts: readonly LocalAccount[];
  /** Sends, nonces and fees; must not retry by itself (see RelayerSender). */
  client: PublicClient;
  /** Receipts and status reads (may batch); defaults to `client`. */
  readClient?: PublicClient;
  chainId: number;
  replacement?: Partial<ReplacementPolicy>;
  lowGasWei?: bigint;
  log?: Logger;
}

export class RelayerPool {
  readonly lanes: readonly RelayerSender[];
  readonly #client: PublicClient;
  readonly #lowGasWei: bigint;
  readonly #stuckAfterMs: number;
  #next = 0;

  constructor(options: RelayerPoolOptions) {
    if (options.accounts.length === 0) throw new Error('a relayer pool needs at least one key');
    const addresses = new Set(options.accounts.map((a) => a.address));
    if (addresses.size !== options.accounts.length) throw new Error('the relayer pool lists a key twice (two lanes would share nonces)');
    this.#client = options.readClient ?? options.client;
    this.#lowGasWei = options.lowGasWei ?? DEFAULT_LOW_GAS_WEI;
    // Every replacement had its turn, and then some: the gap is not closing by itself.
    const policy = { ...DEFAULT_REPLACEMENT, ...definedOnly(options.replacement ?? {}) };
    this.#stuckAfterMs = policy.replaceAfterMs * (policy.maxReplacements + 2);
    this.lanes = options.accounts.map((account) => new RelayerSender(account, options.client, options.chainId, { ...options.replacement, reads: options.readClient }, options.log));
  }

  get addresses(): Address[] {
    return this.lanes.map((lane) => lane.address);
  }

  /** Sends on the least-busy lane; its hash (see RelayerSender.send for errors). */
  send(tx: RelayerTx, options: SendOptions = {}): Promise<Hash> {
    return this.pickLane().send(tx, options);
  }

  /** The least-busy lane (queued sends plus unmined transactions; ties go round the pool). */
  pickLane(): RelayerSender {
    const n = this.lanes.length;
    const start = this.#next;
    this.#next = (this.#next + 1) % n;
    let best = this.lanes[start];
    for (let i = 1; i < n && best.busy > 0; i += 1) {
      const lane = this.lanes[(start + i) % n];
      if (lane.busy < best.busy) best = lane;
    }
    return best;
  }

  /** The receipt of whichever version of this transaction mines; null when no lane sent it (another process did). */
  waitForReceipt(hash: Hash, timeoutMs: number): Promise<TransactionReceipt> | null {
    const lane = this.lanes.find((l) => l.tracks(hash));
    return lane ? lane.waitMined(hash, timeoutMs) : null;
  }

  /** Settles when whichever version of this transaction mines; null when no lane sent it. */
  whenMined(hash: Hash): Promise<void> | null {
    const lane = this.lanes.find((l) => l.tracks(hash));
    return lane ? lane.whenMined(hash) : null;
  }

  /** The newest version's hash of the transaction `hash` belongs to (itself when never replaced). */
  currentHash(hash: Hash): Hash {
    const lane = this.lanes.find((l) => l.tracks(hash));
    return lane ? lane.currentHash(hash) : hash;
  }

  /** Per key: gas balance, nonces the node reports, and whether it runs low. */
  status(client: PublicClient = this.#client): Promise<RelayerStatus[]> {
    return Promise.all(
      this.lanes.map(async (lane) => {
        const address = lane.address;
        const [balance, nodePending, latestNonce] = await Promise.all([
          client.getBalance({ address }),
          client.getTransactionCount({ address, blockTag: 'pending' }),
          client.getTransactionCount({ address, blockTag: 'latest' }),
        ]);
        const unmined = lane.unmined();
        const pendingNonce = Math.max(nodePending, ...unmined.map((t) => t.nonce + 1));
        const oldestMs = unmined.length ? Date.now() - Math.min(...unmined.map((t) => t.firstSentAt)) : 0;
        return {
          address,
          balanceWei: balance.toString(),
          pendingNonce,
          latestNonce,
          gap: pendingNonce - latestNonce,
          lowGas: balance < this.#lowGasWei,
          oldestUnminedSeconds: Math.floor(oldestMs / 1000),
          stuck: oldestMs > this.#stuckAfterMs,
        };
      }),
    );
  }
}
