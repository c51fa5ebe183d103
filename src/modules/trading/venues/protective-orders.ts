// A live venue's protective orders (issue 42 item 4): a position's stop-loss (and take-profit, where the venue holds
// both) rests at the venue as its own order, so it fills there even while our workers are down. Each tick of the
// runtime reconciles them before it decides (reconcileResting): a resting order that filled is booked as the
// position's exit; one missing, or no longer the position's size or level, is placed again; one whose position is
// gone is cancelled. Before any order of ours reduces a position, its resting orders are cancelled first
// (cancelRestingFor): the venue holds the asset for them, and a stop filling beside our close would sell twice.
//
// Exactly once: a resting order's client order id is derived from the runtime, the position and its level, so two
// ticks racing over the same book rest the same order (the venue keeps it once); its fill reaches the book only
// through the tick's commit over the book version it read, so a fill is booked once.
import { createHash } from 'node:crypto';
import { definedOnly } from '../../../platform/defined-only.js';
import { digestOf } from '../../../platform/canonical-json.js';
import { applyFill, qtyOf, type Book, type Fill, type RestingOrder } from '../engine/book.js';
import { dec, sizeText, text, toLots, toTick } from '../engine/money.js';
import type { OrderSummary, TickLeg } from '../engine/tick-types.js';
import type { Venue } from './venue.js';

/** The levels a position's resting orders carry, by kind. */
const LEVEL_OF = { stop_loss: 'stopLoss', take_profit: 'takeProfit' } as const;

/**
 * The book with its resting orders matching its positions at the venue, and an exit leg per resting order that
 * filled (booked here: the position closed, or shrunk by what filled). Run at the start of every tick of a live
 * venue that holds resting orders, flatten included; a venue error fails the tick (retried as any failure).
 */
export async function reconcileResting(a: { book: Book; venue: Venue & { resting: NonNullable<Venue['resting']> }; runtimeId: string; versionHash: string; at: Date }): Promise<{ book: Book; legs: TickLeg[] }> {
  const { venue } = a;
  let book = a.book;
  const legs: TickLeg[] = [];
  const kept: RestingOrder[] = [];
  // 1. What the venue did with the orders resting for us: a fill is booked, a gone order is forgotten (and rested
  //    again below), an order no longer wanted (its position closed, resized or re-levelled) is cancelled.
  for (const order of a.book.resting ?? []) {
    const state = await venue.resting.state(order);
    if (state.state === 'filled') {
      const exit = exitLeg(book, order, state.fill, venue.name, a);
      book = exit.book;
      legs.push(exit.leg);
      continue;
    }
    if (state.state === 'gone') continue;
    const wanted = (await wantedFor(book, order.symbol, venue, a.runtimeId)).find((w) => w.clientOrderId === order.clientOrderId);
    if (wanted) {
      kept.push(order);
      continue;
    }
    const after = await venue.resting.cancel(order);
    if (after.state === 'filled') {
      const exit = exitLeg(book, order, after.fill, venue.name, a);
      book = exit.book;
      legs.push(exit.leg);
    }
  }
  // 2. Every position's levels resting: what is missing is placed (an order of that id already there is left).
  for (const symbol of Object.keys(book.positions)) {
    for (const wanted of await wantedFor(book, symbol, venue, a.runtimeId)) {
      if (kept.some((order) => order.clientOrderId === wanted.clientOrderId)) continue;
      await venue.resting.rest(wanted);
      kept.push(wanted);
    }
  }
  return { book: withResting(book, kept), legs };
}

/**
 * Before an order that reduces a position is sent: the symbol's resting orders cancelled. Answers the book without
 * them, or the fill of one that filled before the cancel reached it (then the order must not be sent: the position
 * is already closed at the venue, and the next tick books that fill).
 */
export async function cancelRestingFor(book: Book, symbol: string, venue: Venue): Promise<{ book: Book } | { filledFirst: RestingOrder }> {
  const resting = (book.resting ?? []).filter((order) => order.symbol === symbol);
  if (resting.length === 0 || !venue.resting) return { book };
  for (const order of resting) {
    const after = await venue.resting.cancel(order);
    if (after.state === 'filled') return { filledFirst: order };
  }
  return { book: withResting(book, (book.resting ?? []).filter((order) => order.symbol !== symbol)) };
}

/** The resting orders a position wants: one per level the venue rests, sized to the position in whole lots. */
async function wantedFor(book: Book, symbol: string, venue: Venue & { resting: NonNullable<Venue['resting']> }, runtimeId: string): Promise<RestingOrder[]> {
  const position = book.positions[symbol];
  if (!position) return [];
  const { lotSize, tickSize } = await venue.market(symbol);
  const qty = qtyOf(position);
  const size = toLots(dec(position.qty).abs(), lotSize);
  if (size.isZero()) return [];
  const side = qty > 0 ? 'sell' : 'buy';
  const wanted: RestingOrder[] = [];
  for (const kind of venue.resting.kinds) {
    const level = position[LEVEL_OF[kind]];
    if (level === undefined) continue;
    // On the tick toward the position (a long's stop rounds up: it never fills below the level asked).
    const triggerPrice = text(toTick(level, tickSize, (qty > 0) === (kind === 'stop_loss') ? 'up' : 'down'));
    const order = { symbol, kind, side, size: sizeText(size, lotSize), triggerPrice } as const;
    wanted.push({ ...order, clientOrderId: restingId(runtimeId, order, position.avgPrice) });
  }
  return wanted;
}

/** The resting order's client order id: 36 characters at most (Binance's bound), the same for the same position and level. */
function restingId(runtimeId: string, order: Omit<RestingOrder, 'clientOrderId'>, avgPrice: string | number): string {
  const hash = createHash('sha256').update(JSON.stringify([runtimeId, order.symbol, order.kind, order.side, order.size, order.triggerPrice, String(avgPrice)])).digest('hex');
  return `${order.kind === 'stop_loss' ? 'sl' : 'tp'}-${hash.slice(0, 32)}`;
}

/** A resting order's fill as the position's exit: a completed execution with its order filled, and the book after it. */
function exitLeg(book: Book, order: RestingOrder, fill: Fill, venueName: string, a: { versionHash: string; at: Date }): { book: Book; leg: TickLeg } {
  const level = Number(order.triggerPrice);
  const decision = { kind: 'exit', reason: order.kind, level, resting: order.clientOrderId, action: order.side, symbol: order.symbol };
  const summary: OrderSummary = definedOnly({
    symbol: order.symbol,
    side: fill.side,
    size: text(dec(fill.size)),
    status: 'filled' as const,
    venue: venueName,
    trigger: { kind: order.kind === 'stop_loss' ? ('stop' as const) : ('take_profit' as const), price: level },
    price: dec(fill.price).toNumber(),
    notionalUsd: dec(fill.size).times(fill.price).toNumber(),
    feeUsd: dec(fill.feeUsd).toNumber(),
  });
  const inputsDigest = digestOf({ versionHash: a.versionHash, at: a.at.toISOString(), resting: order, fill });
  const after = applyFill(book, fill);
  return { book: after, leg: { status: 'completed', inputsDigest, decision, riskAssessment: { outcome: 'resting_order_filled' }, order: summary } };
}

const withResting = (book: Book, resting: RestingOrder[]): Book => {
  const { resting: _, ...rest } = book;
  return resting.length > 0 ? { ...rest, resting } : rest;
};
