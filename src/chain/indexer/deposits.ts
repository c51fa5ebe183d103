// The chain indexer's second follower: plain token `Transfer`s into watched addresses (payment intents' deposit
// addresses), which any wallet or exchange can make without signing anything for us. Unlike the payment index it
// reads only final blocks (head − confirmations), so nothing it reports can be reorged away and it never rolls
// back: a transfer is reported once its block is final, and the sink credits each log once (its key is the log).
import { getAddress, parseAbiItem, type Address, type Client } from 'viem';
import { getBlock, getBlockNumber, getLogs } from 'viem/actions';

export const transferEvent = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

/** One Transfer into a watched address, from a final block. Addresses checksummed, the hash lowercase. */
export interface WatchedTransfer {
  token: Address;
  from: Address;
  to: Address;
  value: bigint;
  transactionHash: string;
  logIndex: number;
  blockNumber: number;
  /** Unix seconds: the chain's time of the block. */
  blockTimestamp: number;
}

/** Where the follower's reads go (the intents module's deposit store). */
export interface TransferSink {
  /** The last block credited, or null before the first read. */
  checkpoint(): Promise<number | null>;
  /** Of these recipients, the watched ones (checksummed). */
  watched(addresses: readonly Address[]): Promise<ReadonlySet<string>>;
  /**
   * In one transaction: moves the checkpoint from `previous` to `next` (nothing is written when another follower
   * moved it first) and credits the transfers, each at most once. Returns how many were new.
   */
  apply(batch: { previous: number | null; next: number; transfers: WatchedTransfer[] }): Promise<number>;
}

export interface TransferFollowerOptions {
  client: Client;
  token: Address;
  sink: TransferSink;
  /** A block is final once `head - number >= confirmations`. */
  confirmations: number;
  /** First block to read with no checkpoint; 'latest' starts at the final head. */
  startBlock: number | 'latest';
  /** Blocks per read. */
  maxBlocksPerTick: number;
}

export interface FollowerTick {
  checkpoint: number;
  credited: number;
  /** More final blocks wait: tick again at once. */
  more: boolean;
}

export class TransferFollower {
  constructor(private readonly options: TransferFollowerOptions) {}

  async tick(): Promise<FollowerTick> {
    const { client, token, sink, confirmations } = this.options;
    const final = Number(await getBlockNumber(client, { cacheTime: 0 })) - confirmations;
    const stored = await sink.checkpoint();
    const start = stored ?? (this.options.startBlock === 'latest' ? final : this.options.startBlock - 1);
    const from = start + 1;
    if (from > final) {
      // Remember where a 'latest' start began, so a restart does not skip what came meanwhile.
      if (stored === null && final >= 0) await sink.apply({ previous: null, next: start, transfers: [] });
      return { checkpoint: start, credited: 0, more: false };
    }
    const to = Math.min(final, from + this.options.maxBlocksPerTick - 1);
    const logs = await getLogs(client, { address: token, event: transferEvent, fromBlock: BigInt(from), toBlock: BigInt(to), strict: true });
    const live = logs.filter((log) => !log.removed && log.args.value > 0n);
    const watched = live.length > 0 ? await sink.watched([...new Set(live.map((log) => getAddress(log.args.to)))]) : new Set<string>();
    const ours = live.filter((log) => watched.has(getAddress(log.args.to)));
    const times = new Map<bigint, number>();
    for (const number of new Set(ours.map((log) => log.blockNumber))) {
      times.set(number, Number((await getBlock(client, { blockNumber: number })).timestamp));
    }
    const transfers = ours.map((log) => ({
      token: getAddress(log.address),
      from: getAddress(log.args.from),
      to: getAddress(log.args.to),
      value: log.args.value,
      transactionHash: log.transactionHash.toLowerCase(),
      logIndex: log.logIndex,
      blockNumber: Number(log.blockNumber),
      blockTimestamp: times.get(log.blockNumber)!,
    }));
    const credited = await sink.apply({ previous: stored, next: to, transfers });
    return { checkpoint: to, credited, more: to < final };
  }
}
