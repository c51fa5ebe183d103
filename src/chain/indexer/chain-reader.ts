import type { Address, Client, Hash, Log } from 'viem';
import { getBlock, getBlockNumber, getLogs, getTransactionReceipt } from 'viem/actions';
import { authorizationUsedEvent } from './pair-logs.js';

export interface Header {
  number: number;
  hash: Hash;
  parentHash: Hash;
  timestamp: number;
}

export interface Receipt {
  transactionHash: Hash;
  from: Address;
  status: 'success' | 'reverted';
  blockNumber: number;
  blockHash: Hash;
  logs: Log[];
}

/** A reference to an `AuthorizationUsed` log: enough to fetch the transaction that emitted it. */
export interface AuthorizationLogRef {
  transactionHash: Hash;
  blockNumber: number;
  blockHash: Hash;
}

const RPC_CONCURRENCY = 8;

/**
 * The few JSON-RPC reads the indexer makes, over any viem client. Headers are cached for one
 * reader's life (one tick), so every check in a tick sees the same block for a number.
 */
export class ChainReader {
  private readonly headers = new Map<number, Promise<Header>>();

  constructor(
    private readonly client: Client,
    private readonly tokens: readonly Address[],
  ) {}

  async head(): Promise<number> {
    return Number(await getBlockNumber(this.client, { cacheTime: 0 }));
  }

  header(number: number): Promise<Header> {
    let cached = this.headers.get(number);
    if (!cached) {
      cached = getBlock(this.client, { blockNumber: BigInt(number) }).then((block) => ({
        number,
        hash: block.hash!,
        parentHash: block.parentHash,
        timestamp: Number(block.timestamp),
      }));
      cached.catch(() => this.headers.delete(number));
      this.headers.set(number, cached);
    }
    return cached;
  }

  headersOf(numbers: Iterable<number>): Promise<Header[]> {
    return mapLimit([...new Set(numbers)], RPC_CONCURRENCY, (n) => this.header(n));
  }

  /** `AuthorizationUsed` logs of our tokens in a block range (for blocks deeper than the reorg window). */
  async authorizationsInRange(from: number, to: number): Promise<AuthorizationLogRef[]> {
    const logs = await getLogs(this.client, {
      address: [...this.tokens],
      event: authorizationUsedEvent,
      fromBlock: BigInt(from),
      toBlock: BigInt(to),
    });
    return logs.map(toRef);
  }

  /** The same for one block by hash (EIP-234), so the logs belong to exactly the header we hold. */
  async authorizationsInBlock(hash: Hash): Promise<AuthorizationLogRef[]> {
    const logs = await getLogs(this.client, { address: [...this.tokens], event: authorizationUsedEvent, blockHash: hash });
    return logs.map(toRef);
  }

  receipts(hashes: readonly Hash[]): Promise<Receipt[]> {
    return mapLimit(hashes, RPC_CONCURRENCY, async (hash) => {
      const r = await getTransactionReceipt(this.client, { hash });
      return {
        transactionHash: r.transactionHash,
        from: r.from,
        status: r.status,
        blockNumber: Number(r.blockNumber),
        blockHash: r.blockHash,
        logs: r.logs,
      };
    });
  }
}

function toRef(log: { transactionHash: Hash | null; blockNumber: bigint | null; blockHash: Hash | null }): AuthorizationLogRef {
  return { transactionHash: log.transactionHash!, blockNumber: Number(log.blockNumber), blockHash: log.blockHash! };
}

async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
