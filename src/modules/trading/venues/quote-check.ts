// The execution path's last look before a live venue's order is sent (docs/trading.md, "Live venues trade on
// their own prices"): the decision valued the order at the feed's price; the venue fills it at its quote, which
// may have moved since. So right before the venue call the order is valued again at the venue's executable quote
// (the ask for a buy, the bid for a sell) plus the slippage allowance, and is not sent when the quote has moved
// past the allowance from the decided price, or when at that price it would take the book past a sizing limit.
// Pure: the caller reads the quote and records the answer.
import type { Book } from '../engine/book.js';
import { dec, text, ZERO, type Dec } from '../engine/money.js';
import type { Quote } from './venue.js';

/** What the decision recorded of the order's risk (engine.ts): the valuation it passed at the feed's price. */
export interface DecidedRisk {
  equityUsd: number;
  /** The book's gross exposure before the order. */
  exposureUsd: number;
  exposureAfterUsd: number;
  checks: Array<{ name: string; value: number; limit: number }>;
}

export interface QuoteCheckInput {
  order: { symbol: string; side: 'buy' | 'sell'; size: string; referencePrice: number };
  quote: Quote;
  /** The book the order was decided on (before it). */
  book: Book;
  limits: { fundLimitUsd: number; maxLeverage: number };
  /** The decision's risk assessment; null for a claim recorded without one (only the price is checked then). */
  decided: DecidedRisk | null;
  /** TRADING_MAX_SLIPPAGE_BPS. */
  maxSlippageBps: number;
}

/** Why the order is not sent; null: send it. */
export type QuoteRefusal = { code: 'price_moved' | 'limit_at_quote'; message: string } | null;

/** Room for the float valuation the decision recorded when an order meets a limit exactly (as engine.ts). */
const EPSILON = 1e-9;

/**
 * An order that only shrinks a position (a close, or part of one that does not flip it) is always sent: a limit
 * stops risk being added, never taken off, and a stop-loss must close at whatever the market now pays. Any other
 * order is refused
 *  - `price_moved` when the executable quote is past the allowance from the price it was decided at (the
 *    decision's size assumed that price; the next tick decides at the new one), and
 *  - `limit_at_quote` when, valued at the quote plus the allowance (the worst fill the allowance admits), it takes
 *    gross exposure past fundLimitUsd × maxLeverage, past maxLeverage × equity (the held position re-marked at
 *    the quote's middle), or the account past its limit.
 * Gross exposure is valued at the ask plus the allowance whatever the side (a short is worth most then).
 */
export function checkAtQuote(input: QuoteCheckInput): QuoteRefusal {
  const { order, quote, book, limits, decided } = input;
  const buy = order.side === 'buy';
  const allowance = dec(input.maxSlippageBps).div(10_000);
  const [bid, ask, reference] = [dec(quote.bid), dec(quote.ask), dec(order.referencePrice)];
  const executable = buy ? ask : bid;

  const held = dec(book.positions[order.symbol]?.qty ?? 0);
  const after = held.plus(buy ? order.size : dec(order.size).neg());
  const flips = !after.isZero() && after.isNegative() !== held.isNegative();
  if (after.abs().lt(held.abs()) && !flips) return null;

  const bound = reference.times(buy ? dec(1).plus(allowance) : dec(1).minus(allowance));
  if (buy ? executable.gt(bound) : executable.lt(bound)) {
    const movedBps = executable.minus(reference).div(reference).times(10_000).abs().toDecimalPlaces(1);
    return {
      code: 'price_moved',
      message: `not sent: the venue's ${buy ? 'ask' : 'bid'} ${text(executable)} is ${text(movedBps)} bps ${buy ? 'above' : 'below'} the ${text(reference)} the order was decided at, past the ${input.maxSlippageBps} bps allowed (TRADING_MAX_SLIPPAGE_BPS); the next tick decides at the venue's new price`,
    };
  }
  if (!decided) return null;

  const mark = ask.times(dec(1).plus(allowance));
  const exposureAfter = dec(decided.exposureUsd).minus(held.abs().times(reference)).plus(after.abs().times(mark));
  const equity = dec(decided.equityUsd).plus(held.times(bid.plus(ask).div(2).minus(reference)));
  const breaches: string[] = [];
  const over = (value: Dec, limit: Dec) => value.gt(limit.times(1 + EPSILON));
  const capacity = dec(limits.fundLimitUsd).times(limits.maxLeverage);
  if (over(exposureAfter, capacity)) breaches.push(`fund_limit: gross exposure ${usd(exposureAfter)} USD > ${usd(capacity)} (fundLimitUsd × maxLeverage)`);
  if (equity.lte(ZERO) || over(exposureAfter.div(equity), dec(limits.maxLeverage))) breaches.push(`leverage: ${equity.lte(ZERO) ? 'no equity' : text(exposureAfter.div(equity).toDecimalPlaces(4))} > ${limits.maxLeverage}`);
  const account = decided.checks.find((check) => check.name === 'account_limit');
  if (account) {
    const accountAfter = dec(account.value).minus(decided.exposureAfterUsd).plus(exposureAfter);
    if (over(accountAfter, dec(account.limit))) breaches.push(`account_limit: ${usd(accountAfter)} USD > ${usd(dec(account.limit))}`);
  }
  if (breaches.length === 0) return null;
  return { code: 'limit_at_quote', message: `not sent: valued at the venue's ask ${text(ask)} plus the ${input.maxSlippageBps} bps allowance (${usd(mark)}), the order breaches ${breaches.join('; ')}` };
}

const usd = (value: Dec) => value.toDecimalPlaces(2).toFixed(2);
