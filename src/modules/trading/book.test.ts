import { describe, expect, it } from 'vitest';
import { applyFill, markToMarket, openBook } from './book.js';
import { PaperVenue } from './venue.js';

describe('the paper book', () => {
  it('opens, adds to, and closes a long position with realized PnL, fees and cash that add up', () => {
    let book = openBook(10_000);
    book = applyFill(book, { symbol: 'X', side: 'buy', size: 10, price: 100, feeUsd: 1 });
    book = applyFill(book, { symbol: 'X', side: 'buy', size: 10, price: 110, feeUsd: 1.1 });
    expect(book.positions.X).toEqual({ qty: 20, avgPrice: 105 });
    expect(book.cashUsd).toBeCloseTo(10_000 - 1000 - 1100 - 2.1, 9);
    expect(markToMarket(book, { X: 120 })).toMatchObject({ exposureUsd: 2400, unrealizedPnlUsd: 300 });

    book = applyFill(book, { symbol: 'X', side: 'sell', size: 20, price: 120, feeUsd: 2.4 });
    expect(book.positions).toEqual({});
    expect(book.realizedPnlUsd).toBeCloseTo(300, 9);
    expect(book.cashUsd).toBeCloseTo(10_000 + 300 - 4.5, 9);
    expect(book).toMatchObject({ trades: 3 });
    expect(book.feesUsd).toBeCloseTo(4.5, 9);
  });

  it('flips a long into a short at the fill price, realizing the closed part', () => {
    let book = applyFill(openBook(1000), { symbol: 'X', side: 'buy', size: 2, price: 50, feeUsd: 0 });
    book = applyFill(book, { symbol: 'X', side: 'sell', size: 5, price: 40, feeUsd: 0 });
    expect(book.positions.X).toEqual({ qty: -3, avgPrice: 40 });
    expect(book.realizedPnlUsd).toBe(-20);
    // A short gains as the price falls: equity = cash + qty × price.
    expect(markToMarket(book, { X: 30 }).equityUsd).toBeCloseTo(1000 - 20 + 30, 9);
  });

  it('measures drawdown from the peak', () => {
    const book = { ...openBook(1000), peakEquityUsd: 1250 };
    expect(markToMarket(book, {}).drawdownPercent).toBeCloseTo(20, 9);
  });
});

describe('the paper venue', () => {
  it('fills whole, 5 bps against the taker, and charges 10 bps of the notional', async () => {
    const venue = new PaperVenue();
    const buy = await venue.place({ symbol: 'X', side: 'buy', size: 2, referencePrice: 100, at: new Date() });
    expect(buy.price).toBeCloseTo(100.05, 9);
    expect(buy.feeUsd).toBeCloseTo(0.2001, 9);
    const sell = await venue.place({ symbol: 'X', side: 'sell', size: 2, referencePrice: 100, at: new Date() });
    expect(sell.price).toBeCloseTo(99.95, 9);
  });
});
