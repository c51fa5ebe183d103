import type { ChainIndexer } from '../../chain/indexer/indexer.js';
import type { BackgroundLoop } from '../../platform/jobs.js';
import type { Publisher } from './publisher.js';

/**
 * The indexer loop (worker role, one leader per cluster): index new blocks, then publish what has
 * become final. Returns true while there is a backlog so the runner goes again at once.
 */
export function indexerLoop(indexer: ChainIndexer, publisher: Publisher, intervalMs: number): BackgroundLoop {
  return {
    name: `chain-indexer:${indexer.chainId}`,
    intervalMs,
    leader: true,
    async run(signal) {
      const tick = await indexer.tick();
      let published = 0;
      let batch: number;
      do {
        batch = await publisher.publish(indexer.chainId, tick.finalizedThrough);
        published += batch;
      } while (batch > 0 && !signal.aborted && published < 5000);
      return tick.more || batch > 0;
    },
  };
}
