// The deciders of a tick's step 2 (engine.ts): what the strategy wants per symbol (a moving-average cross, rules, or
// an llm_agent's orders), and the owner's flatten. Each answers wishes (a target position per symbol) and what it
// decided from; sizing, the venue's rules, risk and the kill switch come after, in the engine.
import { markToMarket, qtyOf } from '../engine/book.js';
import { digestOf } from '../../../platform/canonical-json.js';
import { agentPrompt, DEFAULT_LOOKBACK, ordersOf, type LlmAgentDefinition } from './llm-agent.js';
import { CANDLE_INTERVALS, type Candle, type MarketDataProvider } from '../data/market-data.js';
import { signalOf, signalParams, type QuantSignalDefinition } from './quant-signal.js';
import { candlesNeeded, evaluateRules, type QuantRules } from './rules.js';
import { MIN_ORDER_USD, REBALANCE_BAND, type Decided, type Protection, type TickInput, type TickParts, type Wish } from '../engine/tick-types.js';

export function strategyDecision(input: TickInput, parts: TickParts): Promise<Decided> {
  if (input.version.kind === 'llm_agent') return agentOrder(input, parts);
  const definition = input.version.definition as QuantSignalDefinition;
  return definition.rules ? rulesOrder(input, parts.feed, definition.rules) : strategyOrder(input, parts.feed);
}

/**
 * quant_signal rules (rules.ts): per symbol, its indicators on closed candles decide to enter long or short
 * from flat, to close, or to keep the position; each move toward those targets is an order, and an entry
 * carries the rules' protective levels.
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
  const wishes: Wish[] = [];
  for (const s of signals) {
    if (s.target === 'keep') continue;
    const held = qtyOf(input.book.positions[s.symbol]);
    const target = s.target === 'flat' ? 0 : ((s.target === 'long' ? 1 : -1) * weight * equity) / s.price;
    if (Math.abs(target - held) * s.price < MIN_ORDER_USD) continue;
    const up = s.target === 'long';
    const pct = (p: number | undefined, sign: 1 | -1) => (p === undefined ? undefined : s.price * (1 + (sign * p) / 100));
    const protection: Protection | undefined =
      s.target === 'flat' ? undefined : { stopLoss: pct(rules.stopLossPercent, up ? -1 : 1), takeProfit: pct(rules.takeProfitPercent, up ? 1 : -1), trailingStopPercent: rules.trailingStopPercent };
    wishes.push({ symbol: s.symbol, target, minUsd: MIN_ORDER_USD, protection });
  }
  return { wishes, decision: { kind: 'quant_signal', rules: true, signals }, prices, inputsDigest };
}

/**
 * An llm_agent's tick: its model (or the decision kept for these very inputs) answers the structured
 * decision, at most one order per symbol, each asking for a move as large as the limits allow (and short only
 * with the definition's allowShort); an invalid, refused or late answer places nothing and is recorded as such.
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
  const hold = (extra: Record<string, unknown> = {}): Decided => ({ wishes: [], decision: { ...record, ...extra }, prices, inputsDigest });
  if (record.outcome !== 'ok' || !record.decision) return hold();
  const asked = ordersOf(record.decision, definition.universe, prices);
  if ('invalid' in asked) return hold({ outcome: 'invalid', error: asked.invalid });
  const wishes = asked.orders.map((order): Wish => ({
    symbol: order.symbol,
    target: qtyOf(input.book.positions[order.symbol]) + (order.side === 'buy' ? order.size : -order.size),
    minUsd: 0,
    protection: { stopLoss: order.stopLoss, takeProfit: order.takeProfit },
    limitPrice: order.type === 'limit' ? order.limitPrice : undefined,
    longOnly: !definition.allowShort,
  }));
  return { wishes, decision: { ...record }, prices, inputsDigest };
}

/** Step 2 for the tokens: the signals, their targets, and a rebalance order for each symbol off its target. */
async function strategyOrder(input: TickInput, feed: MarketDataProvider): Promise<Decided> {
  const { definition } = input.version;
  const params = signalParams(definition.instructions);
  const interval = CANDLE_INTERVALS[definition.candleInterval]!;
  const signals = [];
  const candlesBySymbol: Record<string, number[]> = {};
  for (const symbol of definition.universe) {
    const candles = await feed.candles(symbol, interval, input.at, params.slow);
    const price = await feed.price(symbol, input.at);
    candlesBySymbol[symbol] = candles.map((c) => c.close);
    signals.push(signalOf(symbol, candles, price, params));
  }
  const prices: Record<string, number> = Object.fromEntries(signals.map((s) => [s.symbol, s.price]));
  const inputsDigest = digestOf({ versionHash: input.version.contentHash, at: input.at.toISOString(), limits: input.limits, book: input.book, killSwitch: input.killSwitch, closes: candlesBySymbol, prices });

  const equityUsd = markToMarket(input.book, prices).equityUsd;
  const weight = params.exposure / definition.universe.length;
  const wishes: Wish[] = [];
  for (const s of signals) {
    const direction = s.signal === 'long' ? 1 : s.signal === 'short' ? -1 : 0;
    const target = (direction * weight * Math.max(equityUsd, 0)) / s.price;
    const held = qtyOf(input.book.positions[s.symbol]);
    const delta = target - held;
    const usd = Math.abs(delta) * s.price;
    // Drift inside the band is left alone; closing a position (target 0) always goes through.
    const band = target === 0 && held !== 0 ? MIN_ORDER_USD : Math.max(MIN_ORDER_USD, REBALANCE_BAND * weight * equityUsd);
    if (usd >= band) wishes.push({ symbol: s.symbol, target, minUsd: band });
  }
  return { wishes, decision: { kind: 'quant_signal', params, signals }, prices, inputsDigest };
}

/** The owner's flatten: the largest position (in USD at the feed's price) closed whole. */
export async function flattenOrder(input: TickInput, feed: MarketDataProvider): Promise<Decided> {
  const prices: Record<string, number> = {};
  for (const symbol of Object.keys(input.book.positions)) prices[symbol] = await feed.price(symbol, input.at);
  let largest: { symbol: string; usd: number } | null = null;
  for (const [symbol, position] of Object.entries(input.book.positions)) {
    const usd = Math.abs(qtyOf(position)) * prices[symbol]!;
    if (!largest || usd > largest.usd) largest = { symbol, usd };
  }
  const inputsDigest = digestOf({ versionHash: input.version.contentHash, at: input.at.toISOString(), flatten: true, book: input.book, killSwitch: input.killSwitch, prices });
  return { wishes: largest ? [{ symbol: largest.symbol, target: 0, minUsd: 0 }] : [], decision: { kind: 'flatten' }, prices, inputsDigest };
}
