import type { AgentDecider } from './agent-decider.js';
import { definedOnly } from '../../platform/defined-only.js';
import { applyFill, markToMarket, peakAfter, qtyOf, type Book, type Fill, type Position } from './book.js';
import { digestOf } from '../../platform/canonical-json.js';
import { agentPrompt, DEFAULT_LOOKBACK, orderOf, type LlmAgentDefinition } from './llm-agent.js';
import { CANDLE_INTERVALS, type Candle, type MarketDataProvider } from './market-data.js';
import { signalOf, signalParams, type QuantSignalDefinition } from './quant-signal.js';
import { dec, sizeText, text, toLots, toTick, type Dec } from './money.js';
import { candlesNeeded, evaluateRules, type QuantRules } from './rules.js';
import type { ExecutionStatus, KillSwitchMode } from './tables.js';
import type { OrderRequest, Venue } from './venue.js';

export interface RiskLimits {
  fundLimitUsd: number;
  maxLeverage: number;
  maxDrawdownPercent: number;
}

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
}

/** An account's limit on the gross exposure of all its runtimes, and the positions its other runtimes hold. */
export interface AccountRisk {
  maxExposureUsd: number | null;
  otherPositions: Array<Record<string, Position>>;
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
  price: number | null;
  notionalUsd: number;
  feeUsd: number | null;
}

export interface TickOutcome {
  status: Exclude<ExecutionStatus, 'failed' | 'placing'>;
  inputsDigest: string;
  decision: Record<string, unknown>;
  riskAssessment: Record<string, unknown>;
  order: OrderSummary | null;
  book: Book;
  /** The prices the tick read, by symbol. */
  prices: Record<string, number>;
  /** Risk limits that blocked the tick: the runtime must move to needs_review. */
  breaches: string[];
}

/** A rebalance smaller than this is not worth an order (the venue's minimum notional may ask more). */
export const MIN_ORDER_USD = 1;
/** A position is rebalanced only when it is off its target by this share of the target's size. */
export const REBALANCE_BAND = 0.1;
/** Room for float rounding when a target meets a limit exactly. */
const EPSILON = 1e-9;

/**
 * One tick of a runtime, the only code path for scheduled runs, manual runs and backtests: read the
 * candles, decide, assess the risk of the order, and place it unless a limit or the kill switch stops
 * it. Nothing here reads a clock or a random source, so the same inputs give the same outcome.
 *
 * The steps, in order:
 *  1. signals: a moving-average cross per symbol of the universe, over closed candles only;
 *  2. targets: the signal's exposure of the current equity, split evenly; the order is the one rebalance
 *     that moves the book most toward its targets (largest in USD), if it is off by more than the
 *     REBALANCE_BAND (a close to zero always counts);
 *  3. risk: drawdown from the peak, gross exposure against fundLimitUsd × maxLeverage, and leverage
 *     against equity, each after the order; a breach blocks an order that adds exposure (and the
 *     runtime goes to review), never one that only shrinks a position (recorded with the breach);
 *  4. the kill switch: `halt` places nothing, `reduce_only` places only orders that shrink a position;
 *  5. the order to place, if any (`placing`), kept to the venue's rules for the symbol: its size whole
 *     lots, a limit price on the tick, and worth the minimum notional unless it closes a position whole
 *     (else no order, the decision says `belowMinimum`); evaluateTick places it at once, a live venue's
 *     tick claims it first (ticks.ts).
 * A flatten tick skips 1 and 2: its order closes the largest position whole.
 */
export async function decideTick(tick: TickInput, parts: TickParts): Promise<TickOutcome & { placing: OrderRequest | null }> {
  // Dust (under one lot) cannot be traded: the tick decides as if flat there, and gives it back without levels.
  const dust = await dustOf(tick.book, parts.venue);
  const deciding = Object.keys(dust).length === 0 ? tick : { ...tick, book: { ...tick.book, positions: Object.fromEntries(Object.entries(tick.book.positions).filter(([symbol]) => !dust[symbol])) } };
  // Protective levels first: trailing stops follow the price, and a level crossed closes its position this tick.
  const guarded = deciding.flatten ? { book: deciding.book, exit: null } : await guardPositions(deciding, parts.feed);
  const input = { ...deciding, book: guarded.book };
  const decided = input.flatten ? await flattenOrder(input, parts.feed) : (guarded.exit ?? (await strategyDecision(input, parts)));
  const { prices, inputsDigest, protection, limitPrice } = decided;
  const held = { ...input.book, positions: { ...input.book.positions, ...dust } };
  const before = markToMarket(held, prices);

  // 5 (first): the order kept to the venue's rules, or none when it is smaller than they allow.
  const sized = decided.best ? await keptToMarket(input.book, decided.best, prices[decided.best.symbol]!, parts.venue, limitPrice) : null;
  const best = sized && !('unplaced' in sized) ? sized : null;
  const decision = sized && 'unplaced' in sized ? { ...decided.decision, action: 'hold', ...sized.unplaced } : decided.decision;

  // 3. Risk, as the book would stand after the order.
  const heldQty = best ? qtyOf(held.positions[best.symbol]) : 0;
  const after = best ? heldQty + Math.sign(best.delta) * best.size.toNumber() : heldQty;
  const exposureAfterUsd = best ? before.exposureUsd + (Math.abs(after) - Math.abs(heldQty)) * prices[best.symbol]! : before.exposureUsd;
  const leverageAfter = before.equityUsd > 0 ? exposureAfterUsd / before.equityUsd : Infinity;
  const capacityUsd = input.limits.fundLimitUsd * input.limits.maxLeverage;
  const checks = [
    { name: 'drawdown', value: before.drawdownPercent, limit: input.limits.maxDrawdownPercent, ok: before.drawdownPercent < input.limits.maxDrawdownPercent },
    { name: 'fund_limit', value: exposureAfterUsd, limit: capacityUsd, ok: exposureAfterUsd <= capacityUsd * (1 + EPSILON) },
    { name: 'leverage', value: leverageAfter, limit: input.limits.maxLeverage, ok: leverageAfter <= input.limits.maxLeverage * (1 + EPSILON) },
  ];
  const account = input.account;
  if (account?.maxExposureUsd != null) {
    // The other runtimes' positions at this tick's prices where it has them, else at their average price.
    const othersUsd = account.otherPositions.flatMap((positions) => Object.entries(positions)).reduce((sum, [symbol, p]) => sum + Math.abs(qtyOf(p)) * (prices[symbol] ?? Number(p.avgPrice)), 0);
    const accountAfterUsd = othersUsd + exposureAfterUsd;
    checks.push({ name: 'account_limit', value: accountAfterUsd, limit: account.maxExposureUsd, ok: accountAfterUsd <= account.maxExposureUsd * (1 + EPSILON) });
  }
  const breached = checks.filter((c) => !c.ok).map((c) => c.name);
  const reducing = best !== null && Math.abs(after) < Math.abs(heldQty) && Math.sign(after) !== -Math.sign(heldQty);
  // A breach stops risk being added, never taken off: it blocks an order that adds exposure, and only that.
  const breaches = best !== null && !reducing ? breached : [];
  const killed = input.killSwitch === 'halt' || (input.killSwitch === 'reduce_only' && best !== null && !reducing);
  const riskAssessment = {
    ...input.limits,
    equityUsd: before.equityUsd,
    exposureUsd: before.exposureUsd,
    exposureAfterUsd,
    leverageAfter,
    drawdownPercent: before.drawdownPercent,
    checks,
    breaches: breached,
    killSwitch: input.killSwitch,
    outcome: breaches.length ? 'blocked' : killed ? 'halted' : !best ? 'no_order' : breached.length ? 'approved_reducing' : 'approved',
  };

  const status = breaches.length ? 'blocked' : killed ? 'halted' : 'completed';
  const book = { ...held, peakEquityUsd: peakAfter(held, before) };
  if (!best) return { status, inputsDigest, decision, riskAssessment, order: null, book, prices, breaches, placing: null };
  const side = best.delta > 0 ? 'buy' : 'sell';
  const referencePrice = prices[best.symbol]!;
  const order: OrderSummary = definedOnly({
    symbol: best.symbol,
    side,
    size: best.sizeText,
    status: status === 'completed' ? 'placing' : 'blocked',
    venue: parts.venue.name,
    referencePrice,
    limitPrice: best.limitPrice,
    ...protection,
    price: null,
    notionalUsd: best.size.times(referencePrice).toNumber(),
    feeUsd: null,
  });
  if (status !== 'completed') return { status, inputsDigest, decision, riskAssessment, order, book, prices, breaches, placing: null };
  return { status, inputsDigest, decision, riskAssessment, order, book, prices, breaches, placing: requestOf(order, input.at) };
}

/** The order a summary stands for, as a venue takes it. */
export function requestOf(order: OrderSummary, at: Date): OrderRequest {
  return definedOnly({ symbol: order.symbol, side: order.side, size: order.size, referencePrice: order.referencePrice!, limitPrice: order.limitPrice, at });
}

/**
 * Positions under one lot of their venue's lot size (left by a close rounded down to lots, a fee taken in the
 * asset, or a lot size changed), as the tick gives them back: without protective levels, since a crossed level
 * would otherwise be every tick's order and never fill. They stay in the book at their value.
 */
async function dustOf(book: Book, venue: TickParts['venue']): Promise<Record<string, Position>> {
  const dust: Record<string, Position> = {};
  for (const [symbol, position] of Object.entries(book.positions)) {
    const { lotSize } = await venue.market(symbol);
    if (dec(position.qty).abs().lt(lotSize)) dust[symbol] = { qty: position.qty, avgPrice: position.avgPrice };
  }
  return dust;
}

type Sized = { symbol: string; delta: number; size: Dec; sizeText: string; limitPrice?: string } | { unplaced: Record<string, unknown> };

/**
 * The decided order at the venue's rules for its symbol: its size rounded down to whole lots, a limit price
 * moved onto the tick (down for a buy, up for a sell: never past what was asked), and worth the minimum
 * notional, unless it closes the position whole (a close is never trapped by a minimum; a real venue may
 * still refuse dust, which sends the runtime to review). A limit order is immediate-or-cancel at the tick's
 * price: one that would not fill now (its price on the tick) is not placed. `unplaced` says why not.
 */
async function keptToMarket(book: Book, best: NonNullable<Decided['best']>, price: number, venue: TickParts['venue'], limitPrice: number | undefined): Promise<Sized> {
  const rules = await venue.market(best.symbol);
  const held = book.positions[best.symbol];
  const heldQty = qtyOf(held);
  const closesWhole = heldQty !== 0 && Math.abs(best.delta + heldQty) <= Math.abs(heldQty) * EPSILON;
  // A whole close sizes from the book's exact quantity, not the decision's number.
  const size = toLots(closesWhole ? held!.qty : Math.abs(best.delta), rules.lotSize);
  const limit = limitPrice === undefined ? undefined : toTick(limitPrice, rules.tickSize, best.delta > 0 ? 'down' : 'up');
  if (limit && (best.delta > 0 ? limit.lt(price) : limit.gt(price))) return { unplaced: { unfilled: 'limit_not_marketable', limitPrice: text(limit) } };
  // Valued at the market's price, where the order fills (a limit order fills there or better, never at a far limit).
  const notionalUsd = size.times(price);
  if (size.isZero() || (!closesWhole && notionalUsd.lt(rules.minNotionalUsd))) {
    return { unplaced: { belowMinimum: { symbol: best.symbol, size: text(size), notionalUsd: notionalUsd.toNumber(), ...rules } } };
  }
  return { symbol: best.symbol, delta: best.delta, size, sizeText: sizeText(size, rules.lotSize), limitPrice: limit && text(limit) };
}

/** What a tick decides with: the feed, the venue's name, and (an llm_agent's tick) the model. */
export interface TickParts {
  feed: MarketDataProvider;
  venue: Pick<Venue, 'name' | 'market'>;
  agent?: AgentDecider;
}

interface Decided {
  best: { symbol: string; delta: number; usd: number } | null;
  decision: Record<string, unknown>;
  prices: Record<string, number>;
  inputsDigest: string;
  /** Levels the order gives its position (an llm_agent's stopLoss and takeProfit, or rules' levels). */
  protection?: Protection;
  /** An llm_agent's limit order: its price as asked (decideTick puts it on the venue's tick). */
  limitPrice?: number;
}

/** Protective levels an order gives the position it opens or grows. */
export interface Protection {
  stopLoss?: number;
  takeProfit?: number;
  trailingStopPercent?: number;
}

function strategyDecision(input: TickInput, parts: TickParts): Promise<Decided> {
  if (input.version.kind === 'llm_agent') return agentOrder(input, parts);
  const definition = input.version.definition as QuantSignalDefinition;
  return definition.rules ? rulesOrder(input, parts.feed, definition.rules) : strategyOrder(input, parts.feed);
}

/**
 * Before the strategy: each trailing stop's best price moves with the market (the book answered carries it),
 * and a position whose price crossed its stopLoss, its trailing stop or its takeProfit is closed whole: that is
 * the tick's order (it only reduces, so no limit blocks it). `exit` is null when no level was crossed.
 */
async function guardPositions(input: TickInput, feed: MarketDataProvider): Promise<{ book: Book; exit: Decided | null }> {
  const guarded = Object.entries(input.book.positions).filter(([, p]) => p.stopLoss !== undefined || p.takeProfit !== undefined || p.trailingStopPercent !== undefined);
  if (guarded.length === 0) return { book: input.book, exit: null };
  const prices: Record<string, number> = {};
  const positions = { ...input.book.positions };
  for (const [symbol, p] of guarded) {
    const price = (prices[symbol] = await feed.price(symbol, input.at));
    if (p.trailingStopPercent !== undefined) positions[symbol] = { ...p, bestPrice: qtyOf(p) > 0 ? Math.max(p.bestPrice ?? price, price) : Math.min(p.bestPrice ?? price, price) };
  }
  const book = { ...input.book, positions };
  for (const [symbol] of guarded) {
    const p = positions[symbol]!;
    const price = prices[symbol]!;
    const qty = qtyOf(p);
    const long = qty > 0;
    const trail = p.trailingStopPercent === undefined ? undefined : p.bestPrice! * (long ? 1 - p.trailingStopPercent / 100 : 1 + p.trailingStopPercent / 100);
    const crossed = (level: number | undefined, below: boolean) => level !== undefined && (below ? price <= level : price >= level);
    const reason = crossed(p.stopLoss, long) ? 'stop_loss' : crossed(trail, long) ? 'trailing_stop' : crossed(p.takeProfit, !long) ? 'take_profit' : null;
    if (!reason) continue;
    const level = reason === 'stop_loss' ? p.stopLoss : reason === 'trailing_stop' ? trail : p.takeProfit;
    const decision = { kind: 'exit', reason, level, price, action: long ? 'sell' : 'buy', symbol };
    const inputsDigest = digestOf({ versionHash: input.version.contentHash, at: input.at.toISOString(), exit: decision, book, killSwitch: input.killSwitch });
    return { book, exit: { best: { symbol, delta: -qty, usd: Math.abs(qty) * price }, decision, prices, inputsDigest } };
  }
  return { book, exit: null };
}

/**
 * quant_signal rules (rules.ts): per symbol, its indicators on closed candles decide to enter long or short
 * from flat, to close, or to keep the position; the one order is the largest move toward those targets, and
 * an entry carries the rules' protective levels.
 */
async function rulesOrder(input: TickInput, feed: MarketDataProvider, rules: QuantRules): Promise<Decided> {
  const definition = input.version.definition as QuantSignalDefinition;
  const interval = CANDLE_INTERVALS[definition.candleInterval]!;
  const count = candlesNeeded(rules);
  const signals = [];
  const candlesBySymbol: Record<string, Candle[]> = {};
  const prices: Record<string, number> = {};
  for (const symbol of definition.universe) {
    const candles = (candlesBySymbol[symbol] = await feed.candles(symbol, interval, input.at, count));
    const price = (prices[symbol] = await feed.price(symbol, input.at));
    const qty = qtyOf(input.book.positions[symbol]);
    signals.push({ symbol, price, ...evaluateRules(rules, candles, price, qty > 0 ? 'long' : qty < 0 ? 'short' : 'flat') });
  }
  const inputsDigest = digestOf({ versionHash: input.version.contentHash, at: input.at.toISOString(), limits: input.limits, book: input.book, killSwitch: input.killSwitch, candles: candlesBySymbol, prices });
  const equity = Math.max(markToMarket(input.book, prices).equityUsd, 0);
  const weight = rules.sizing.exposure / definition.universe.length;
  let best: Decided['best'] = null;
  for (const s of signals) {
    if (s.target === 'keep') continue;
    const held = qtyOf(input.book.positions[s.symbol]);
    const target = s.target === 'flat' ? 0 : ((s.target === 'long' ? 1 : -1) * weight * equity) / s.price;
    const delta = target - held;
    const usd = Math.abs(delta) * s.price;
    if (usd >= MIN_ORDER_USD && (!best || usd > best.usd)) best = { symbol: s.symbol, delta, usd };
  }
  const chosen = best && signals.find((s) => s.symbol === best!.symbol);
  const entering = chosen && (chosen.target === 'long' || chosen.target === 'short');
  const up = chosen?.target === 'long';
  const pct = (p: number | undefined, sign: 1 | -1) => (p === undefined || !chosen ? undefined : chosen.price * (1 + (sign * p) / 100));
  const protection: Protection | undefined = entering
    ? { stopLoss: pct(rules.stopLossPercent, up ? -1 : 1), takeProfit: pct(rules.takeProfitPercent, up ? 1 : -1), trailingStopPercent: rules.trailingStopPercent }
    : undefined;
  const decision = { kind: 'quant_signal', rules: true, signals, action: best ? (best.delta > 0 ? 'buy' : 'sell') : 'hold', symbol: best?.symbol ?? null };
  return { best, decision, prices, inputsDigest, protection };
}

/**
 * An llm_agent's tick: its model (or the decision kept for these very inputs) answers the structured
 * decision; an invalid, refused or late answer places nothing and is recorded as such.
 */
async function agentOrder(input: TickInput, parts: TickParts): Promise<Decided> {
  const definition = input.version.definition as LlmAgentDefinition;
  if (!parts.agent) throw new Error('an llm_agent tick needs a model decider');
  const interval = CANDLE_INTERVALS[definition.candleInterval]!;
  const candles: Record<string, Candle[]> = {};
  const prices: Record<string, number> = {};
  for (const symbol of definition.universe) {
    candles[symbol] = await parts.feed.candles(symbol, interval, input.at, definition.lookback ?? DEFAULT_LOOKBACK);
    prices[symbol] = await parts.feed.price(symbol, input.at);
  }
  const equityUsd = markToMarket(input.book, prices).equityUsd;
  const prompt = agentPrompt({ at: input.at, definition, limits: input.limits, book: input.book, equityUsd, prices, candles });
  // The prompt holds everything the model reads (time, candles, prices, book, limits): its digest keys the decision.
  const inputsDigest = digestOf({ versionHash: input.version.contentHash, versionId: input.version.id, promptDigest: prompt.digest });
  const record = await parts.agent.decide({ versionHash: input.version.contentHash, inputsDigest, definition, prompt });
  const hold = (extra: Record<string, unknown> = {}): Decided => ({ best: null, decision: { ...record, ...extra, action: 'hold', symbol: null }, prices, inputsDigest });
  if (record.outcome !== 'ok' || !record.decision) return hold();
  const asked = orderOf(record.decision, definition.universe, prices);
  if ('hold' in asked) return hold();
  if ('invalid' in asked) return hold({ outcome: 'invalid', error: asked.invalid });
  const { order } = asked;
  const price = prices[order.symbol]!;
  const delta = order.side === 'buy' ? order.size : -order.size;
  const protection = { stopLoss: order.stopLoss, takeProfit: order.takeProfit };
  const decided = { best: { symbol: order.symbol, delta, usd: order.size * price }, decision: { ...record, action: order.side, symbol: order.symbol }, prices, inputsDigest, protection };
  return order.type === 'limit' ? { ...decided, limitPrice: order.limitPrice } : decided;
}

/** Steps 1 and 2: the strategy's signals, its targets, and the one rebalance order. */
async function strategyOrder(input: TickInput, feed: MarketDataProvider): Promise<Decided> {
  const { definition } = input.version;
  const params = signalParams(definition.instructions);
  const interval = CANDLE_INTERVALS[definition.candleInterval]!;
  const signals = [];
  const candlesBySymbol: Record<string, number[]> = {};
  // 1. Signals.
  for (const symbol of definition.universe) {
    const candles = await feed.candles(symbol, interval, input.at, params.slow);
    const price = await feed.price(symbol, input.at);
    candlesBySymbol[symbol] = candles.map((c) => c.close);
    signals.push(signalOf(symbol, candles, price, params));
  }
  const prices: Record<string, number> = Object.fromEntries(signals.map((s) => [s.symbol, s.price]));
  const inputsDigest = digestOf({ versionHash: input.version.contentHash, at: input.at.toISOString(), limits: input.limits, book: input.book, killSwitch: input.killSwitch, closes: candlesBySymbol, prices });

  // 2. Targets and the one order.
  const equityUsd = markToMarket(input.book, prices).equityUsd;
  const weight = params.exposure / definition.universe.length;
  let best: { symbol: string; delta: number; usd: number } | null = null;
  for (const s of signals) {
    const direction = s.signal === 'long' ? 1 : s.signal === 'short' ? -1 : 0;
    const target = (direction * weight * Math.max(equityUsd, 0)) / s.price;
    const held = qtyOf(input.book.positions[s.symbol]);
    const delta = target - held;
    const usd = Math.abs(delta) * s.price;
    // Drift inside the band is left alone; closing a position (target 0) always goes through.
    const band = target === 0 && held !== 0 ? MIN_ORDER_USD : Math.max(MIN_ORDER_USD, REBALANCE_BAND * weight * equityUsd);
    if (usd >= band && (!best || usd > best.usd)) best = { symbol: s.symbol, delta, usd };
  }
  const decision = {
    kind: 'quant_signal',
    params,
    signals,
    action: best ? (best.delta > 0 ? 'buy' : 'sell') : 'hold',
    symbol: best?.symbol ?? null,
  };
  return { best, decision, prices, inputsDigest };
}

/** The owner's flatten: the largest position (in USD at the feed's price) closed whole. */
async function flattenOrder(input: TickInput, feed: MarketDataProvider): Promise<Decided> {
  const prices: Record<string, number> = {};
  for (const symbol of Object.keys(input.book.positions)) prices[symbol] = await feed.price(symbol, input.at);
  let best: Decided['best'] = null;
  for (const [symbol, position] of Object.entries(input.book.positions)) {
    const usd = Math.abs(qtyOf(position)) * prices[symbol]!;
    if (!best || usd > best.usd) best = { symbol, delta: -qtyOf(position), usd };
  }
  const decision = { kind: 'flatten', action: best ? (best.delta > 0 ? 'buy' : 'sell') : 'hold', symbol: best?.symbol ?? null };
  const inputsDigest = digestOf({ versionHash: input.version.contentHash, at: input.at.toISOString(), flatten: true, book: input.book, killSwitch: input.killSwitch, prices });
  return { best, decision, prices, inputsDigest };
}

/**
 * The order's fill applied to the book the decision left: the summary and the book after it. The order's
 * protective levels go to the position it opened or grew.
 */
export function filled(book: Book, fill: Fill, decided: OrderSummary): { order: OrderSummary; book: Book } {
  const levels = definedOnly(protectionOf(decided));
  const size = dec(fill.size);
  const price = dec(fill.price);
  // The decided size keeps its lot's decimals; a fill of another size (a partial fill, a fee taken in the asset) is written as filled.
  const sizeWritten = size.eq(decided.size) ? decided.size : text(size);
  const order: OrderSummary = { ...decided, side: fill.side, size: sizeWritten, status: 'filled', price: price.toNumber(), notionalUsd: size.times(price).toNumber(), feeUsd: dec(fill.feeUsd).toNumber() };
  const after = applyFill(book, fill);
  const held = qtyOf(book.positions[fill.symbol]);
  const position = after.positions[fill.symbol];
  const grew = position && Math.abs(qtyOf(position)) > Math.abs(held) && Object.keys(levels).length > 0;
  if (!grew) return { order, book: after };
  const guarded = { ...position, ...levels, ...(levels.trailingStopPercent !== undefined ? { bestPrice: price.toNumber() } : {}) };
  return { order, book: { ...after, positions: { ...after.positions, [fill.symbol]: guarded } } };
}

/**
 * decideTick, then the order placed and filled: the whole tick for the paper venue and backtests, whose
 * orders have no effect outside the book. A live venue's tick claims its order before placing it (ticks.ts).
 */
export async function evaluateTick(input: TickInput, parts: TickParts & { venue: Venue }): Promise<TickOutcome> {
  const { placing, ...outcome } = await decideTick(input, parts);
  if (!placing) return outcome;
  const fill = await parts.venue.place(placing);
  return { ...outcome, ...filled(outcome.book, fill, outcome.order!) };
}

/** The protective levels an order carries. */
export const protectionOf = (order: Pick<OrderSummary, 'stopLoss' | 'takeProfit' | 'trailingStopPercent'>): Protection => ({ stopLoss: order.stopLoss, takeProfit: order.takeProfit, trailingStopPercent: order.trailingStopPercent });
