// One tick of a runtime (decideTick, evaluateTick): the protective exits (protective-exits.ts) and the strategy
// (deciders.ts) say what they want; here each wish is sized, kept to the venue's rules, assessed by risk and the kill
// switch (risk.ts), and, on the paper venue, filled.
import { definedOnly } from '../../../platform/defined-only.js';
import { applyFill, markToMarket, peakAfter, qtyOf, type Book, type Fill, type Marked, type Position } from './book.js';
import { flattenOrder, strategyDecision } from '../strategies/deciders.js';
import { dec, sizeText, text, toLots, toTick, type Dec } from './money.js';
import { guardPositions } from './protective-exits.js';
import { assessOrder, REVIEW_LIMITS, roomFor } from './risk.js';
import type { Decided, OrderSummary, Protection, TickInput, TickLeg, TickOutcome, TickParts, Wish } from './tick-types.js';
import { OrderUnfilled, type OrderRequest, type Venue } from '../venues/venue.js';

export type { AccountRisk, RiskLimits } from './risk.js';
export { MIN_ORDER_USD, REBALANCE_BAND } from './tick-types.js';
export type { OrderSummary, Protection, StrategyKind, TickInput, TickLeg, TickOutcome, TickParts } from './tick-types.js';

/** Room for float rounding when a target meets a limit exactly. */
const EPSILON = 1e-9;

/**
 * One tick of a runtime, the only code path for scheduled runs, manual runs and backtests: read the
 * candles, decide, assess the risk of each order, and place it unless a limit or the kill switch stops
 * it. Nothing here reads a clock or a random source, so the same inputs give the same outcome.
 *
 * The steps, in order:
 *  1. protective levels (protective-exits.ts): each position's levels against the bars closed since its last
 *     check and the tick's price; every position whose level was met is closed, filling as its resting order
 *     would have (an llm_agent's model is then not asked this tick);
 *  2. the strategy: a target position per symbol (a moving-average cross, rules, or the model's orders),
 *     each one an order when it is off by more than the REBALANCE_BAND (a close to zero always counts);
 *  3. the orders, at most one per symbol, reductions first and then the rest, each group in the universe's
 *     order (orderedWishes); each in turn, over the book as the orders before it leave it:
 *     a. sized as much as allowed (sizedWithin): a target past what the sizing limits leave (risk.ts
 *        roomFor) is cut to it, and the decision records `capped` (the size asked, the size left, the limit);
 *     b. kept to the venue's rules for the symbol: its size whole lots, a limit price on the tick, and
 *        worth the minimum notional unless it closes a position whole (else no order: `belowMinimum`);
 *     c. risk (risk.ts assessOrder): a breach blocks an order that adds exposure, never one that only
 *        shrinks a position; only a drawdown block hands the runtime to review (REVIEW_LIMITS);
 *     d. the kill switch: `halt` places only protective exits and the owner's flatten (it stops new risk, never
 *        protection), `reduce_only` places only orders that shrink a position;
 *  4. the orders to place (`placing`): evaluateTick places them at once, a live venue's tick claims them
 *     first (ticks.ts).
 * A flatten tick skips 1 and 2: its order closes the largest position whole.
 */
export async function decideTick(tick: TickInput, parts: TickParts): Promise<TickOutcome<TickLeg & { placing: OrderRequest | null }>> {
  // Dust (under one lot) cannot be traded: the tick decides as if flat there, and gives it back without levels.
  const dust = await dustOf(tick.book, parts.venue);
  const deciding = Object.keys(dust).length === 0 ? tick : { ...tick, book: { ...tick.book, positions: Object.fromEntries(Object.entries(tick.book.positions).filter(([symbol]) => !dust[symbol])) } };
  // 1. Protective levels first: trailing stops follow the price, and a level crossed closes its position this tick.
  const guarded = deciding.flatten ? { book: deciding.book, exits: [] } : await guardPositions(deciding, parts.feed);
  const input = { ...deciding, book: guarded.book };
  // 2. The strategy (a model is not asked over a book its exits are changing).
  const asked = input.flatten ? [await flattenOrder(input, parts.feed)] : guarded.exits.length > 0 && input.version.kind === 'llm_agent' ? [] : [await strategyDecision(input, parts)];
  const sources = [...guarded.exits, ...asked];
  const prices: Record<string, number> = Object.assign({}, ...sources.map((s) => s.prices));
  const held = { ...input.book, positions: { ...input.book.positions, ...dust } };
  const before = markToMarket(held, prices);
  const legs = await legsOf(input, sources, held, before, prices, parts.venue);
  const blockedBy = legs.filter((leg) => leg.status === 'blocked').flatMap((leg) => leg.riskAssessment.breaches as string[]);
  const breaches = [...new Set(blockedBy.filter((name) => REVIEW_LIMITS.includes(name)))];
  return { legs, book: { ...held, peakEquityUsd: peakAfter(held, before) }, prices, breaches };
}

/**
 * Step 3: the tick's orders, each sized, kept to the venue's rules and checked by risk and the kill switch over
 * the book as the orders before it leave it (each approved one counted as filled at the feed's price, where risk
 * values it). One leg per order decided; a tick that decides none is one leg without an order.
 */
async function legsOf(input: TickInput, sources: Decided[], held: Book, before: Marked, prices: Record<string, number>, venue: TickParts['venue']): Promise<Array<TickLeg & { placing: OrderRequest | null }>> {
  const assess = (positions: Record<string, Position>, order: { symbol: string; delta: number; protective?: boolean } | null) =>
    assessOrder({ limits: input.limits, account: input.account, killSwitch: input.killSwitch, positions, prices, before, order });
  const wishes = orderedWishes(input, sources);
  if (wishes.length === 0) {
    const source = sources.at(-1)!;
    const { status, riskAssessment } = assess(held.positions, null);
    return [{ status, inputsDigest: source.inputsDigest, decision: { ...source.decision, action: 'hold', symbol: null }, riskAssessment, order: null, placing: null }];
  }
  const positions = { ...held.positions };
  const legs = [];
  for (const { wish, source } of wishes) {
    const price = prices[wish.symbol]!;
    const heldQty = qtyOf(input.book.positions[wish.symbol]);
    const room = roomFor(wish.symbol, positions, prices, before.equityUsd, input.limits, input.account, input.sizingMarginBps);
    const sized = sizedWithin(wish, heldQty, room);
    const delta = sized.target - heldQty;
    const worth = delta !== 0 && Math.abs(delta) * price >= wish.minUsd;
    const kept = worth ? await keptToMarket(input.book, { symbol: wish.symbol, delta }, price, venue, wish.limitPrice) : null;
    const best = kept && !('unplaced' in kept) ? kept : null;
    const capped = sized.limit ? await cappedRecord(wish, heldQty, best, sized.limit, venue) : undefined;
    const decision = { ...source.decision, action: best ? (best.delta > 0 ? 'buy' : 'sell') : 'hold', symbol: wish.symbol, ...(kept && 'unplaced' in kept ? kept.unplaced : {}), ...(capped ? { capped } : {}) };
    const signed = best ? best.size.times(Math.sign(best.delta)) : null;
    // A protective level's exit and the owner's flatten are the book's closes: the kill switch's halt lets them go.
    const protective = source.decision.kind === 'exit' || source.decision.kind === 'flatten';
    const { status, riskAssessment } = assess(positions, best && { symbol: best.symbol, delta: signed!.toNumber(), protective });
    if (!best) {
      legs.push({ status, inputsDigest: source.inputsDigest, decision, riskAssessment, order: null, placing: null });
      continue;
    }
    const order: OrderSummary = definedOnly({
      symbol: best.symbol,
      side: best.delta > 0 ? 'buy' : 'sell',
      size: best.sizeText,
      status: status === 'completed' ? 'placing' : 'blocked',
      venue: venue.name,
      referencePrice: price,
      limitPrice: best.limitPrice,
      ...wish.protection,
      trigger: wish.trigger,
      price: null,
      notionalUsd: best.size.times(price).toNumber(),
      feeUsd: null,
    });
    // An order to place counts for the orders after it, as risk values it: filled at the feed's price.
    const was = positions[best.symbol];
    if (status === 'completed') positions[best.symbol] = { ...(was ?? { avgPrice: price }), qty: text(dec(was?.qty ?? 0).plus(signed!)) };
    legs.push({ status, inputsDigest: source.inputsDigest, decision, riskAssessment, order, placing: status === 'completed' ? requestOf(order, input.at) : null });
  }
  return legs;
}

/**
 * The deciders' orders, one per symbol (a protective level's exit before the strategy's), in the order they are
 * placed: those that only shrink a position first (they free room under the limits), then the rest; each group
 * in the order of the strategy's universe (a symbol outside it, as a flatten's may be, after, by name).
 */
function orderedWishes(input: TickInput, sources: Decided[]): Array<{ wish: Wish; source: Decided }> {
  const wishes = new Map<string, { wish: Wish; source: Decided }>();
  for (const source of sources) for (const wish of source.wishes) if (!wishes.has(wish.symbol)) wishes.set(wish.symbol, { wish, source });
  const { universe } = input.version.definition;
  const rank = (symbol: string) => {
    const i = universe.indexOf(symbol);
    return i === -1 ? universe.length : i;
  };
  const reducing = ({ symbol, target }: Wish) => {
    const heldQty = qtyOf(input.book.positions[symbol]);
    return Math.abs(target) < Math.abs(heldQty) && Math.sign(target) !== -Math.sign(heldQty);
  };
  return [...wishes.values()].sort((a, b) => Number(reducing(b.wish)) - Number(reducing(a.wish)) || rank(a.wish.symbol) - rank(b.wish.symbol) || a.wish.symbol.localeCompare(b.wish.symbol));
}

/**
 * Step 3a, sizing as much as allowed: the position a wish asks for, cut to what the limits leave. A position may
 * grow (or open, or flip to the other side) only up to the room the sizing limits leave it, and never below
 * zero where the strategy may not short (an llm_agent without allowShort); what shrinks a position is never cut.
 * `limit` names what cut it (null: nothing did).
 */
function sizedWithin(wish: Wish, heldQty: number, room: { qty: number; limit: string }): { target: number; limit: string | null } {
  let target = wish.target;
  let limit: string | null = null;
  if (wish.longOnly && target < Math.min(heldQty, 0)) [target, limit] = [Math.min(heldQty, 0), 'allow_short'];
  const flips = Math.sign(target) === -Math.sign(heldQty);
  const grows = flips ? target !== 0 : Math.abs(target) > Math.abs(heldQty);
  // The room is for the whole position: a flip may take all of it, a growth keeps at least what is held.
  const most = flips ? room.qty : Math.max(room.qty, Math.abs(heldQty));
  if (grows && Math.abs(target) > most) [target, limit] = [Math.sign(target) * most, room.limit];
  return { target, limit };
}

/** What the decision records of a cut: the size asked and the size left (in the venue's lots; 0: no order), and the limit. */
async function cappedRecord(wish: Wish, heldQty: number, best: { sizeText: string } | null, limit: string, venue: TickParts['venue']) {
  const { lotSize } = await venue.market(wish.symbol);
  return { requestedSize: sizeText(toLots(Math.abs(wish.target - heldQty), lotSize), lotSize), size: best ? best.sizeText : '0', limit };
}

/** The order a summary stands for, as a venue takes it. */
export function requestOf(order: OrderSummary, at: Date): OrderRequest {
  return definedOnly({ symbol: order.symbol, side: order.side, size: order.size, referencePrice: order.referencePrice!, limitPrice: order.limitPrice, trigger: order.trigger, at });
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
async function keptToMarket(book: Book, best: { symbol: string; delta: number }, price: number, venue: TickParts['venue'], limitPrice: number | undefined): Promise<Sized> {
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


/**
 * The order's fill applied to the book the decision left: the summary and the book after it. The order's
 * protective levels go to the position it opened or grew, checked from `at` (the tick that decided it) on.
 */
export function filled(book: Book, fill: Fill, decided: OrderSummary, at: Date): { order: OrderSummary; book: Book } {
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
  const guarded = { ...position, ...levels, ...(levels.trailingStopPercent !== undefined ? { bestPrice: price.toNumber() } : {}), checkedAt: at.toISOString() };
  return { order, book: { ...after, positions: { ...after.positions, [fill.symbol]: guarded } } };
}

/**
 * decideTick, then its orders placed and filled one after another, in their order: the whole tick for the
 * paper venue and backtests, whose orders have no effect outside the book. A live venue's tick claims its
 * orders before placing them (ticks.ts).
 */
export async function evaluateTick(input: TickInput, parts: TickParts & { venue: Venue }): Promise<TickOutcome> {
  const decided = await decideTick(input, parts);
  let book = decided.book;
  const legs: TickLeg[] = [];
  for (const { placing, ...leg } of decided.legs) {
    if (!placing) {
      legs.push(leg);
      continue;
    }
    let fill: Fill;
    try {
      fill = await parts.venue.place(placing);
    } catch (error) {
      // An immediate-or-cancel limit order with no price within its limit now: nothing filled, as at a live venue.
      if (!(error instanceof OrderUnfilled)) throw error;
      legs.push({ ...leg, order: { ...leg.order!, status: 'unfilled' } });
      continue;
    }
    const after = filled(book, fill, leg.order!, input.at);
    book = after.book;
    legs.push({ ...leg, order: after.order });
  }
  return { ...decided, legs, book };
}

/** The protective levels an order carries. */
export const protectionOf = (order: Pick<OrderSummary, 'stopLoss' | 'takeProfit' | 'trailingStopPercent'>): Protection => ({ stopLoss: order.stopLoss, takeProfit: order.takeProfit, trailingStopPercent: order.trailingStopPercent });