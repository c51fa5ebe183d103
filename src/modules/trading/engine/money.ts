// Exact money for the book and the venues: decimal arithmetic (decimal.js) and each symbol's trading rules
// (lot size, tick size, minimum notional), as exchanges publish them.
import { Decimal } from 'decimal.js';

/**
 * An amount as the book keeps it: decimal text, exact (books written before exact money hold numbers;
 * `dec` reads both alike).
 */
export type Amount = string | number;

/**
 * Eighty significant digits: a size and a price may each carry 12 integer digits and 18 decimals
 * (TRADING_PAPER_MARKETS), so their product and the sums of such products stay exact.
 */
const Exact = Decimal.clone({ precision: 80, rounding: Decimal.ROUND_HALF_EVEN, toExpNeg: -80, toExpPos: 80 });
export type Dec = Decimal;

export const dec = (value: Amount | Decimal): Decimal => new Exact(value);
/** The amount as the book stores it: plain decimal text, never exponent notation. */
export const text = (value: Decimal): string => value.toFixed();
export const ZERO = dec(0);

/** A symbol's trading rules at a venue: orders are whole lots, prices whole ticks, and worth at least the minimum. */
export interface MarketRules {
  lotSize: string;
  tickSize: string;
  minNotionalUsd: string;
}

/** What a venue that publishes no rules for a symbol trades by: six decimals of size, cents, a dollar at least. */
export const DEFAULT_MARKET_RULES: MarketRules = { lotSize: '0.000001', tickSize: '0.01', minNotionalUsd: '1' };

/** `size` rounded down to whole lots (never up: an order is never larger than asked). */
export const toLots = (size: Amount | Decimal, lotSize: string): Decimal => dec(size).abs().divToInt(lotSize).times(lotSize);

/** `price` on the venue's tick grid, rounded `up` or down: always against the side the rounding would favour. */
export function toTick(price: Amount | Decimal, tickSize: string, direction: 'up' | 'down'): Decimal {
  const ticks = dec(price).div(tickSize);
  return (direction === 'up' ? ticks.ceil() : ticks.floor()).times(tickSize);
}

/** A size written with as many decimals as its lot size has (0.00001 → 5). */
export const sizeText = (size: Decimal, lotSize: string): string => size.toFixed(Math.max(dec(lotSize).decimalPlaces(), 0));

/** A fee of `bps` basis points on `notionalUsd`, rounded up to the cent: splitting an order never makes it cheaper. */
export const feeUsd = (notionalUsd: Decimal, bps: number): Decimal => notionalUsd.times(bps).div(10_000).toDecimalPlaces(2, Decimal.ROUND_UP);
