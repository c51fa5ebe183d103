import type { StrategyRow } from '../store.js';

// Who pays for a strategy and who reads its definitions: one rule, so what is sold and what is shown never
// drift apart (docs/trading.md#what-others-see).

/**
 * Whether the strategy is another owner's and priced for `userId`: then a runtime or a backtest of it from
 * the user's account pays its access (once per account), and the user never reads its definitions (the
 * rules, parameters and prompt its access sells), only its description and each version's summary. A free
 * public strategy costs nothing, so its definitions stay readable; the owner always reads them.
 */
export const isPricedFor = (strategy: Pick<StrategyRow, 'userId' | 'accessPriceUsd' | 'accessPayTo'>, userId: string): boolean =>
  strategy.userId !== userId && strategy.accessPriceUsd !== null && strategy.accessPayTo !== null;
