// Whether a version's market data can serve a runtime, asked at launch (RuntimeService.create): a runtime
// that cannot be served is refused with the reason, instead of going active and failing (or, worse, trading
// on prices that are not its venue's) at its first tick.
import { tradingErrors } from '../errors.js';
import { DEFAULT_LOOKBACK, type LlmAgentDefinition } from '../strategies/llm-agent.js';
import { CANDLE_INTERVALS, lastClosedStart, MissingMarketData, type MarketDataProvider } from './market-data.js';
import { candlesRead, type QuantSignalDefinition } from '../strategies/quant-signal.js';
import type { VersionRow } from '../store.js';
import type { Venue } from '../venues/venue.js';

const MINUTE_MS = 60_000;

/**
 * In order:
 *  1. On a live venue, the runtime reads that venue's own prices (`venueFeed`, the `venue` data source) and
 *     nothing else: embedded prices are computed and imported ones are files, and an order decided on them is
 *     sized at a price the venue does not trade at (docs/trading.md, "Live venues trade on their own prices").
 *  2. A feed with holes (imported data) holds the candles a tick at `now` reads, for every symbol: imported
 *     data serves a runtime only while its candles are imported as they close. For another owner's priced
 *     strategy (`sealed`) the refusal leaves out the range, which would tell how many candles it reads.
 * Throws the refusal (409); answers nothing when the data serves.
 */
export async function checkDataServes(a: { version: VersionRow; feed: MarketDataProvider; venue: Pick<Venue, 'name' | 'live'>; venueFeed: MarketDataProvider | null; now: Date; sealed: boolean }): Promise<void> {
  const { version, feed, venue, venueFeed, now } = a;
  if (venue.live && feed !== venueFeed) throw tradingErrors.dataSourceNotVenue(venue.name, feed.name);
  if (!feed.gap) return;
  const definition = version.definition as (QuantSignalDefinition | LlmAgentDefinition) & { universe: string[]; candleInterval: string };
  const count = version.kind === 'llm_agent' ? ((definition as LlmAgentDefinition).lookback ?? DEFAULT_LOOKBACK) : candlesRead(definition as QuantSignalDefinition);
  const interval = CANDLE_INTERVALS[definition.candleInterval]!;
  const to = new Date(lastClosedStart(now, interval) * MINUTE_MS);
  const from = new Date(to.getTime() - (count - 1) * interval * MINUTE_MS);
  const source = { source: feed.name, interval: definition.candleInterval };
  for (const symbol of definition.universe) {
    let gap;
    try {
      gap = await feed.gap(symbol, interval, [{ from, to }]);
    } catch (error) {
      if (!(error instanceof MissingMarketData)) throw error;
      throw tradingErrors.marketDataNotCurrent({ ...source, symbol, detail: error.message });
    }
    if (!gap) continue;
    throw tradingErrors.marketDataNotCurrent(a.sealed ? { ...source, symbol } : { ...source, symbol, needFrom: from.toISOString(), needTo: to.toISOString(), firstMissing: gap.first.toISOString(), missing: gap.missing });
  }
}
