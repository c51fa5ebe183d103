import { getBlockNumber } from 'viem/actions';
import type { Client } from 'viem';
import type { Metrics } from '../../platform/metrics.js';
import type { PaymentIndexStore } from './index-store.js';

/**
 * Indexer lag: blocks between the chain head and the index checkpoint, read at scrape time (one RPC call
 * and one query), so every node reports it, not only the worker that holds the indexer's lock.
 */
export function registerIndexerMetrics(metrics: Metrics, store: Pick<PaymentIndexStore, 'checkpoint'>, client: Client, chainId: number): void {
  metrics.gauge('tollgate_indexer_lag_blocks', 'Blocks between the chain head and the payment index checkpoint', ['chain_id'], async (set) => {
    const [head, checkpoint] = await Promise.all([getBlockNumber(client, { cacheTime: 0 }), store.checkpoint(chainId)]);
    set({ chain_id: String(chainId) }, Number(head) - (checkpoint?.blockNumber ?? -1));
  });
}
