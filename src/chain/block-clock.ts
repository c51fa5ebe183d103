// The chain's time for on-chain verdicts: the latest block's timestamp, never a node's clock.
// Read at most once per `maxAgeMs` (concurrent readers share one request), so a verify costs no
// extra round trip under load. On the embedded devchain, which mines only when a transaction
// arrives, the read first brings an idle chain up to the wall clock (Devchain.catchUp).
import type { PublicClient } from 'viem';
import type { Devchain } from './devchain.js';

export type BlockClock = () => Promise<bigint>;

export function createBlockClock(client: PublicClient, devchain: Devchain | null, maxAgeMs = 1_000): BlockClock {
  let cached: { at: number; time: bigint } | null = null;
  let reading: Promise<bigint> | null = null;
  const read = async (): Promise<bigint> => {
    const time = devchain ? await devchain.catchUp() : (await client.getBlock({ blockTag: 'latest' })).timestamp;
    cached = { at: Date.now(), time };
    return time;
  };
  const refresh = () => (reading ??= read().finally(() => (reading = null)));
  return () => {
    const age = cached ? Date.now() - cached.at : Number.POSITIVE_INFINITY;
    if (age >= maxAgeMs) return refresh();
    // Past half its age the reading is renewed in the background, so under load nobody waits for the
    // round trip (and, on the devchain, its empty block); what callers get is never older than maxAgeMs.
    if (age >= maxAgeMs / 2) refresh().catch(() => undefined);
    return Promise.resolve(cached!.time);
  };
}
