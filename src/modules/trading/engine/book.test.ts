import { describe, expect, it } from 'vitest';
import { applyFill, markToMarket, openBook, peakAfter } from './book.js';
import { dec } from './money.js';
import { OrderUnfilled, PaperVenue, PAPER_VENUE_DEFAULTS } from '../venues/venue.js';

describe('the paper book', () => {
  it('opens, adds to, and closes a long position with realized PnL, fees and cash that add up to the cent', () => {
    let book = openBook(10_000);
    book = applyFill(book, { symbol: 'X', side: 'buy', size: '10', price: '100', feeUsd: '1' });
    book = applyFill(book, { symbol: 'X', side: 'buy', size: '10', price: '110', feeUsd: '1.1' });
    expect(book.positions.X).toEqual({ qty: '20', avgPrice: '105' });
    expect(book.cashUsd).toBe('7897.9'); // 10,000 − 1,000 − 1,100 − 2.10
    expect(markToMarket(book, { X: 120 })).toMatchObject({ exposureUsd: 2400, unrealizedPnlUsd: 300 });

    book = applyFill(book, { symbol: 'X', side: 'sell', size: '20', price: '120', feeUsd: '2.4' });
    expect(book).toMatchObject({ positions: {}, realizedPnlUsd: '300', cashUsd: '10295.5', feesUsd: '4.5', trades: 3 });
  });

  it('flips a long into a short at the fill price, realizing the closed part', () => {
    let book = applyFill(openBook(1000), { symbol: 'X', side: 'buy', size: '2', price: '50', feeUsd: '0' });
    book = applyFill(book, { symbol: 'X', side: 'sell', size: '5', price: '40', feeUsd: '0' });
    expect(book.positions.X).toEqual({ qty: '-3', avgPrice: '40' });
    expect(book.realizedPnlUsd).toBe('-20');
    // A short gains as the price falls: equity = cash + qty × price.
    expect(markToMarket(book, { X: 30 }).equityUsd).toBe(1010);
  });

  it('measures drawdown from the peak, and moves the peak to a new high to the cent', () => {
    const book = { ...openBook(1000), peakEquityUsd: '1250' };
    expect(markToMarket(book, {}).drawdownPercent).toBeCloseTo(20, 9);
    const long = applyFill(openBook(1000), { symbol: 'X', side: 'buy', size: '3', price: '100', feeUsd: '0' });
    expect(peakAfter(long, markToMarket(long, { X: 100.123456 }))).toBe('1000.37');
    expect(peakAfter(long, markToMarket(long, { X: 90 }))).toBe('1000');
  });

  it('stays exact where floats drift: ten thousand small round trips leave cash at the sum of their fees to the digit', () => {
    let book = openBook('1000');
    let floatCash = 1000;
    for (let i = 0; i < 10_000; i++) {
      book = applyFill(book, { symbol: 'X', side: 'buy', size: '0.1', price: '0.3', feeUsd: '0.01' });
      book = applyFill(book, { symbol: 'X', side: 'sell', size: '0.1', price: '0.3', feeUsd: '0.01' });
      floatCash = floatCash - 0.1 * 0.3 - 0.01 + 0.1 * 0.3 - 0.01;
    }
    expect(book).toMatchObject({ cashUsd: '800', feesUsd: '200', realizedPnlUsd: '0', positions: {}, trades: 20_000 });
    expect(floatCash).not.toBe(800); // what the book kept before (JavaScript numbers)
  });

  it('reads a book kept before exact money (numbers) and writes it back as text', () => {
    const legacy = { cashUsd: 900.1, positions: { X: { qty: 1, avgPrice: 99.9 } }, realizedPnlUsd: 0, feesUsd: 0.1, peakEquityUsd: 1000, trades: 1 };
    const after = applyFill(legacy, { symbol: 'X', side: 'sell', size: '1', price: '100', feeUsd: '0.1' });
    expect(after).toMatchObject({ cashUsd: '1000', positions: {}, realizedPnlUsd: '0.1', feesUsd: '0.2' });
  });
});

describe('the paper venue', () => {
  it('fills a market order 5 bps against the taker, on the tick, with 10 bps of taker fee rounded up to the cent', async () => {
    const venue = new PaperVenue();
    const at = new Date();
    // 200.10 × 10 bps = 0.2001 → 0.21.
    expect(await venue.place({ symbol: 'X', side: 'buy', size: '2', referencePrice: 100, at })).toEqual({ symbol: 'X', side: 'buy', size: '2', price: '100.05', feeUsd: '0.21' });
    // 99.95 exactly: the tick rounding takes nothing more from the seller.
    expect(await venue.place({ symbol: 'X', side: 'sell', size: '2', referencePrice: 100, at })).toMatchObject({ price: '99.95', feeUsd: '0.2' });
    // 123.456 × 1.0005 = 123.517728 → 123.52 for a buyer, 123.394272 → 123.39 for a seller.
    expect(await venue.place({ symbol: 'X', side: 'buy', size: '1', referencePrice: 123.456, at })).toMatchObject({ price: '123.52', feeUsd: '0.13' });
    expect(await venue.place({ symbol: 'X', side: 'sell', size: '1', referencePrice: 123.456, at })).toMatchObject({ price: '123.39', feeUsd: '0.13' });
  });

  it('a limit order at or through the touch takes it (taker); one inside the spread is immediate-or-cancel, as live: unfilled, never a maker fill', async () => {
    const venue = new PaperVenue({ ...PAPER_VENUE_DEFAULTS, makerFeeBps: 1, takerFeeBps: 7.5 });
    const at = new Date();
    // The touch is 100.05: a buy limited at 100.5, or at 10,000, pays the touch, not its limit (1,000.5 × 7.5 bps = 0.750375 → 0.76).
    expect(await venue.place({ symbol: 'X', side: 'buy', size: '10', referencePrice: 100, limitPrice: '100.5', at })).toMatchObject({ price: '100.05', feeUsd: '0.76' });
    expect(await venue.place({ symbol: 'X', side: 'buy', size: '10', referencePrice: 100, limitPrice: '10000', at })).toMatchObject({ price: '100.05', feeUsd: '0.76' });
    expect(await venue.place({ symbol: 'X', side: 'buy', size: '10', referencePrice: 100, at })).toMatchObject({ price: '100.05', feeUsd: '0.76' });
    expect(await venue.place({ symbol: 'X', side: 'sell', size: '10', referencePrice: 100, limitPrice: '1', at })).toMatchObject({ price: '99.95' });
    // Inside the spread nothing meets it now: the rest (all of it) is cancelled, as an IOC order at a live venue is.
    // It used to fill at its own price as maker (100.02, 0.11 of fee), understating the cost.
    await expect(venue.place({ symbol: 'X', side: 'buy', size: '10', referencePrice: 100, limitPrice: '100.02', at })).rejects.toBeInstanceOf(OrderUnfilled);
    await expect(venue.place({ symbol: 'X', side: 'sell', size: '10', referencePrice: 100, limitPrice: '99.97', at })).rejects.toBeInstanceOf(OrderUnfilled);
  });

  it('a protective exit fills as its resting order: a stop from its trigger at the touch (taker), a take-profit at its level (maker)', async () => {
    const venue = new PaperVenue({ ...PAPER_VENUE_DEFAULTS, makerFeeBps: 1, takerFeeBps: 7.5 });
    const at = new Date();
    // The tick's price is 90, the stop was met at 95: a market sell from 95, 5 bps under it (94.9525 → 94.95).
    expect(await venue.place({ symbol: 'X', side: 'sell', size: '10', referencePrice: 90, trigger: { kind: 'stop', price: 95 }, at })).toMatchObject({ price: '94.95', feeUsd: '0.72' });
    // The take-profit at 110 reached by a later price of 112: its resting limit filled at 110, the maker fee (1,100 × 1 bp = 0.11).
    expect(await venue.place({ symbol: 'X', side: 'sell', size: '10', referencePrice: 112, trigger: { kind: 'take_profit', price: 110 }, at })).toEqual({ symbol: 'X', side: 'sell', size: '10', price: '110', feeUsd: '0.11' });
  });

  it('answers each symbol its configured rules, and the defaults for any other', async () => {
    const venue = new PaperVenue({ ...PAPER_VENUE_DEFAULTS, markets: { 'BTC-USD': { lotSize: '0.00001', tickSize: '0.1', minNotionalUsd: '5' } } });
    expect(await venue.market('BTC-USD')).toEqual({ lotSize: '0.00001', tickSize: '0.1', minNotionalUsd: '5' });
    expect(await venue.market('ETH-USD')).toEqual({ lotSize: '0.000001', tickSize: '0.01', minNotionalUsd: '1' });
    const fill = await venue.place({ symbol: 'BTC-USD', side: 'buy', size: '0.00003', referencePrice: 60_000.01, at: new Date() });
    expect(dec(fill.price).mod('0.1').isZero()).toBe(true);
  });
});
