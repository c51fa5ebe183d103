// The shapes a tick is made of, shared by the engine (engine.ts), its deciders (deciders.ts) and the protective
// exits (protective-exits.ts): what goes in, what one decider wants, what comes out.
import type { AgentDecider } from '../strategies/agent-decider.js';
import type { Book } from './book.js';
import type { LlmAgentDefinition } from '../strategies/llm-agent.js';
import type { MarketDataProvider } from '../data/market-data.js';
import type { QuantSignalDefinition } from '../strategies/quant-signal.js';
import type { AccountRisk, RiskLimits } from './risk.js';
import type { ExecutionStatus, KillSwitchMode } from '../tables.js';
import type { Venue } from '../venues/venue.js';

export type StrategyKind = 'quant_signal' | 'llm_agent';

export interface TickInput {
  /** `id` scopes an llm_agent's kept decisions to this version of this strategy (never another user's twin). */
  version: { id: string; contentHash: string; kind: StrategyKind; definition: QuantSignalDefinition | LlmAgentDefinition };
  limits: RiskLimits;
  book: Book;
  killSwitch: KillSwitchMode;
  at: Date;
  /** The owner's flatten: the order closes the largest position, whatever the strategy would do. */
  flatten?: boolean;
  /** The account-wide limit across its runtimes (none in a backtest). */
  account?: AccountRisk;
  /**
   * Basis points an order sized "as much as allowed" keeps below the limits (a live venue: its re-check at the
   * quote values the order at up to (1 + TRADING_MAX_SLIPPAGE_BPS)² of the decided price, quote-check.ts).
   */
  sizingMarginBps?: number;
}

export interface OrderSummary {
  symbol: string;
  side: 'buy' | 'sell';
  size: string;
  /** placing: claimed and sent to a live venue, its fill not recorded yet (ticks.ts). */
  status: 'filled' | 'blocked' | 'placing' | 'rejected' | 'unfilled';
  venue: string;
  /** The feed's price when the order was decided (a live venue fills at its own). */
  referencePrice?: number;
  /** A limit order's price (on the venue's tick); a market order has none. */
  limitPrice?: string;
  /** Protective levels the position takes when this order opens or grows it (an llm_agent's order, or rules'). */
  stopLoss?: number;
  takeProfit?: number;
  trailingStopPercent?: number;
  /** A protective exit's fill as the resting order it stands for (ExitTrigger). */
  trigger?: ExitTrigger;
  price: number | null;
  notionalUsd: number;
  feeUsd: number | null;
}

/** One order a tick decided (or none): one execution (`leg` 0, 1, … of the tick). */
export interface TickLeg {
  status: Exclude<ExecutionStatus, 'failed' | 'placing'>;
  inputsDigest: string;
  decision: Record<string, unknown>;
  riskAssessment: Record<string, unknown>;
  order: OrderSummary | null;
}

export interface TickOutcome<Leg extends TickLeg = TickLeg> {
  /** One per symbol the tick decided an order for, in the order they are placed; one without an order when it decided none. */
  legs: Leg[];
  book: Book;
  /** The prices the tick read, by symbol. */
  prices: Record<string, number>;
  /** Risk limits that blocked an order and hand the runtime to its owner (REVIEW_LIMITS): it must move to needs_review. */
  breaches: string[];
}

/** A rebalance smaller than this is not worth an order (the venue's minimum notional may ask more). */
export const MIN_ORDER_USD = 1;
/** A position is rebalanced only when it is off its target by this share of the target's size. */
export const REBALANCE_BAND = 0.1;

/** What a tick decides with: the feed, the venue's name, and (an llm_agent's tick) the model. */
export interface TickParts {
  feed: MarketDataProvider;
  venue: Pick<Venue, 'name' | 'market'>;
  agent?: AgentDecider;
}

/** What one decider (a protective level's exit, the strategy, the owner's flatten) wants this tick. */
export interface Decided {
  /** At most one per symbol. */
  wishes: Wish[];
  /** What it decided from (each leg adds its own `action` and `symbol`). */
  decision: Record<string, unknown>;
  prices: Record<string, number>;
  inputsDigest: string;
}

/** One symbol's order as a decider wants it: the position to reach, sized as much as the limits allow (sizedWithin). */
export interface Wish {
  symbol: string;
  /** The position asked for, in units (0: closed; negative: short). */
  target: number;
  /** The smallest move worth an order, in USD (a strategy's rebalance band); a move under it places nothing. */
  minUsd: number;
  /** Levels the order gives its position (an llm_agent's stopLoss and takeProfit, or rules' levels). */
  protection?: Protection;
  /** An llm_agent's limit order: its price as asked (decideTick puts it on the venue's tick). */
  limitPrice?: number;
  /** The position may not go short (an llm_agent without allowShort). */
  longOnly?: boolean;
  /** A protective level's exit: the level met and the price it fills from (protective-exits.ts). */
  trigger?: ExitTrigger;
}

/**
 * How a protective exit fills on the paper venue, as the resting order it stands for would have: a stop (stop-loss,
 * trailing stop) becomes a market order once its level is met, so it fills from `price` (the level, or the bar's
 * open when the market gapped past it) at the touch; a take-profit is a resting limit a later price reached, so it
 * fills at `price` (its level, or the better open of a gap) as maker. A live venue sends a market order (its resting
 * orders at the venue are the protection that does not need us: protective-orders.ts).
 */
export interface ExitTrigger {
  kind: 'stop' | 'take_profit';
  price: number;
}

/** Protective levels an order gives the position it opens or grows. */
export interface Protection {
  stopLoss?: number;
  takeProfit?: number;
  trailingStopPercent?: number;
}
