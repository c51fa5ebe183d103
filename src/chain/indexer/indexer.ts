import { getAddress, type Address, type Client, type Hash } from 'viem';
import type { Clock } from '../../platform/clock.js';
import { ChainReader, type Header } from './chain-reader.js';
import { pairPaymentLogs } from './pair-logs.js';
import { paymentIdOf } from './payment-id.js';
import type { BlockRef, Checkpoint, IndexedPaymentFact, IndexerSink } from './sink.js';

export interface IndexerLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface ChainIndexerOptions {
  /** Where the index lives (the txapi module's store): checkpoint, block hashes, payments. */
  sink: IndexerSink;
  /** Any viem client on the chain (a PublicClient works). */
  client: Client;
  chainId: number;
  tokens: readonly Address[];
  /**
   * Every facilitator signer of the deployment: only transactions they sent are payments we index.
   * Called once per tick, after the head is read (see tick), so a signer registered while a tick runs
   * cannot have sent anything into the blocks that tick covers.
   */
  signers: () => readonly Address[] | Promise<readonly Address[]>;
  /** Finality depth: a block is final once `head - number >= confirmations`. */
  confirmations: number;
  clock: Clock;
  log: IndexerLogger;
  /** First block to index when there is no checkpoint yet; 'latest' starts at the current head. Default 0. */
  startBlock?: number | 'latest';
  /** Blocks per getLogs range. Default 2000. */
  maxBlocksPerTick?: number;
  /** Recent block hashes kept to find a fork point. Default confirmations + 64. */
  reorgWindow?: number;
}

export interface IndexerTick {
  head: number;
  /** Last block indexed (-1 before the first block). */
  checkpoint: number;
  /** Rows at or below this block are final and may be published. */
  finalizedThrough: number;
  inserted: number;
  rolledBack: boolean;
  /** More blocks wait (catching up, or just rolled back): tick again at once. */
  more: boolean;
}

/** A chain moved while we read it (logs, receipts and headers disagree): re-run the tick. */
class ChainMoved extends Error {}

/**
 * Follows the `Transfer` + `AuthorizationUsed` pairs of transactions our facilitator signers sent,
 * from a durable checkpoint. Blocks inside the reorg window are read header-first and their logs by
 * block hash, and each tick checks that the checkpoint is still an ancestor of the head; when it is
 * not, it rolls back to the fork point (see IndexerSink.rollback) and re-indexes from there.
 */
export class ChainIndexer {
  readonly chainId: number;
  private readonly store: IndexerSink;
  private readonly tokenSet: ReadonlySet<string>;
  private readonly maxBlocks: number;
  private readonly window: number;
  private warnedNoSigners = false;
  private signerSet = '';

  constructor(private readonly options: ChainIndexerOptions) {
    this.chainId = options.chainId;
    this.store = options.sink;
    this.tokenSet = new Set(options.tokens.map((t) => t.toLowerCase()));
    this.maxBlocks = options.maxBlocksPerTick ?? 2000;
    this.window = Math.max(options.reorgWindow ?? options.confirmations + 64, options.confirmations + 1);
  }

  async tick(): Promise<IndexerTick> {
    const reader = new ChainReader(this.options.client, this.options.tokens);
    const head = await reader.head();
    const stored = await this.store.checkpoint(this.chainId);
    const cursor = stored ?? (await this.initialCursor(reader, head));
    const result = (checkpoint: number, more: boolean, inserted = 0, rolledBack = false): IndexerTick => ({
      head,
      checkpoint,
      finalizedThrough: Math.min(checkpoint, head - this.options.confirmations),
      inserted,
      rolledBack,
      more,
    });

    if (stored && !(await this.isCanonical(reader, stored, head))) {
      const fork = await this.rollBack(reader, stored, head);
      return result(fork.blockNumber, true, 0, true);
    }
    const from = cursor.blockNumber + 1;
    if (from > head) return result(cursor.blockNumber, false);
    // Signers are read after the head on purpose: a signer registers before it sends anything, so one
    // missing from this list can only have transactions in blocks above `head`, which this tick leaves
    // for the next one (that reads the registry again).
    const signers = await this.options.signers();
    if (signers.length === 0) {
      // Nothing can be attributed to us yet: hold the checkpoint so blocks are read once a signer is registered.
      if (!this.warnedNoSigners) this.options.log.warn({ chainId: this.chainId }, 'no facilitator signers registered; indexer waits');
      this.warnedNoSigners = true;
      return result(cursor.blockNumber, false);
    }
    const signerSet = signers.map((s) => s.toLowerCase()).sort().join(',');
    if (signerSet !== this.signerSet) {
      // A node started with a new key (or FACILITATOR_SIGNERS grew): say from which block it is followed.
      this.options.log.info({ chainId: this.chainId, signers, fromBlock: from }, 'indexing facilitator signers');
      this.signerSet = signerSet;
    }
    const to = Math.min(head, from + this.maxBlocks - 1);
    try {
      const inserted = await this.indexRange(reader, stored, cursor, from, to, head, signers);
      return result(to, to < head, inserted);
    } catch (error) {
      if (!(error instanceof ChainMoved)) throw error;
      this.options.log.warn({ chainId: this.chainId, from, to, reason: error.message }, 'chain moved during indexing; retrying');
      // Not `more`: wait one interval so a node serving inconsistent data cannot make us spin.
      return result(cursor.blockNumber, false);
    }
  }

  private async initialCursor(reader: ChainReader, head: number): Promise<Checkpoint> {
    const start = this.options.startBlock === 'latest' ? head : Math.max(0, this.options.startBlock ?? 0);
    // Nothing before block 0, and a start block beyond the head has no header yet: no parent to check.
    if (start === 0 || start - 1 > head) return { blockNumber: start - 1, blockHash: null };
    return { blockNumber: start - 1, blockHash: (await reader.header(start - 1)).hash };
  }

  /** Is the checkpoint block still on the chain that ends at `head`? */
  private async isCanonical(reader: ChainReader, checkpoint: Checkpoint, head: number): Promise<boolean> {
    if (checkpoint.blockHash === null) return true;
    if (head > checkpoint.blockNumber) return (await reader.header(checkpoint.blockNumber + 1)).parentHash === checkpoint.blockHash;
    if (head === checkpoint.blockNumber) return (await reader.header(head)).hash === checkpoint.blockHash;
    return false; // the chain got shorter than our checkpoint
  }

  private async rollBack(reader: ChainReader, stored: Checkpoint, head: number): Promise<Checkpoint> {
    const known = await this.store.recentBlocks(this.chainId);
    let fork: Checkpoint | null = null;
    for (const block of known) {
      if (block.blockNumber > head) continue;
      if ((await reader.header(block.blockNumber)).hash === block.blockHash) {
        fork = { blockNumber: block.blockNumber, blockHash: block.blockHash };
        break;
      }
    }
    if (!fork) {
      // Deeper than the window: restart below everything we remember.
      const below = Math.min(known.at(-1)?.blockNumber ?? stored.blockNumber, head) - 1;
      fork = { blockNumber: below, blockHash: below >= 0 ? (await reader.header(below)).hash : null };
      this.options.log.error({ chainId: this.chainId, fork: below }, 'reorg deeper than the reorg window');
    }
    const { deleted, publishedAbove } = await this.store.rollback({ chainId: this.chainId, previous: stored, fork, at: this.options.clock.now() });
    this.options.log.warn({ chainId: this.chainId, from: stored.blockNumber, fork: fork.blockNumber, deleted }, 'chain reorg: rolled back');
    if (publishedAbove > 0) {
      this.options.log.error(
        { chainId: this.chainId, fork: fork.blockNumber, publishedAbove },
        'reorg deeper than the finality depth: published records above the fork are kept; raise INDEXER_CONFIRMATIONS',
      );
    }
    return fork;
  }

  private async indexRange(
    reader: ChainReader,
    stored: Checkpoint | null,
    cursor: Checkpoint,
    from: number,
    to: number,
    head: number,
    signerList: readonly Address[],
  ) {
    // Blocks from windowFrom up can still reorg: read their headers first and their logs by hash.
    const windowFrom = Math.max(from, head - this.window + 1);
    const recent = windowFrom <= to ? await reader.headersOf(range(windowFrom, to)) : [];
    assertLinked(recent, windowFrom === from ? cursor.blockHash : null);
    const refs =
      windowFrom > from ? await reader.authorizationsInRange(from, Math.min(to, windowFrom - 1)) : [];
    for (const header of recent) refs.push(...(await reader.authorizationsInBlock(header.hash)));

    const signers = new Set(signerList.map((s) => s.toLowerCase()));
    const receipts = await reader.receipts([...new Set(refs.map((r) => r.transactionHash))]);
    const ours = receipts.filter((r) => r.status === 'success' && signers.has(r.from.toLowerCase()));
    const headers = new Map<number, Header>();
    for (const h of await reader.headersOf([to, ...ours.map((r) => r.blockNumber)])) headers.set(h.number, h);
    for (const h of recent) headers.set(h.number, h);

    const now = this.options.clock.now();
    const payments: IndexedPaymentFact[] = [];
    for (const receipt of ours) {
      const header = headers.get(receipt.blockNumber)!;
      if (header.hash !== receipt.blockHash) throw new ChainMoved(`receipt ${receipt.transactionHash} is not in block ${header.hash}`);
      for (const p of pairPaymentLogs(receipt.logs, this.tokenSet)) {
        payments.push({
          chainId: this.chainId,
          token: p.token,
          paymentId: paymentIdOf(this.chainId, p.token, p.payer, p.nonce),
          payer: p.payer,
          recipient: p.recipient,
          value: p.value.toString(),
          authorizationNonce: p.nonce,
          transactionHash: receipt.transactionHash.toLowerCase(),
          logIndex: p.logIndex,
          blockNumber: header.number,
          blockHash: header.hash,
          blockTimestamp: header.timestamp,
          facilitator: getAddress(receipt.from),
          indexedAt: now,
        });
      }
    }
    const last = headers.get(to)!;
    return this.store.apply({
      chainId: this.chainId,
      previous: stored,
      next: { blockNumber: to, blockHash: last.hash },
      payments,
      blocks: recent.map(toBlockRef),
      keepBlocksFrom: to - this.window + 1,
      at: now,
    });
  }
}

/** Consecutive headers must chain by parent hash (and onto `parent` when given). */
function assertLinked(headers: readonly Header[], parent: string | null) {
  let previous: Hash | string | null = parent;
  for (const header of headers) {
    if (previous !== null && header.parentHash !== previous) throw new ChainMoved(`block ${header.number} does not extend its parent`);
    previous = header.hash;
  }
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const toBlockRef = (h: Header): BlockRef => ({ blockNumber: h.number, blockHash: h.hash, parentHash: h.parentHash });
