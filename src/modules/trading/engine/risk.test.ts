// The risk engine on its own: the room the sizing limits leave a symbol (the least of them, named), and one
// order's checks: a breach blocks an order that adds exposure, naming the limits, never one that shrinks.
import { describe, expect, it } from 'vitest';
import { markToMarket, openBook, type Book } from './book.js';
import { assessOrder, REVIEW_LIMITS, roomFor } from './risk.js';

const limits = { fundLimitUsd: 10_000, maxLeverage: 2, maxDrawdownPercent: 20 };
const prices = { 'BTC-USD': 100, 'ETH-USD': 50 };
const book: Book = { ...openBook(4_000), positions: { 'BTC-USD': { qty: '60', avgPrice: '100' }, 'ETH-USD': { qty: '-40', avgPrice: '50' } } };

describe('roomFor', () => {
  it("is the least room the sizing limits leave the symbol's position, with the rest of the book as it stands", () => {
    // Equity 4,000 + 6,000 - 2,000 = 8,000: leverage 2 × 8,000 = 16,000 < fund 20,000; ETH takes 2,000 of it.
    expect(markToMarket(book, prices).equityUsd).toBe(8_000);
    expect(roomFor('BTC-USD', book.positions, prices, 8_000, limits)).toEqual({ qty: 140, limit: 'leverage' });
    // The account's other runtimes hold 11,000: 15,000 leaves 4,000, less ETH's 2,000.
    const account = { maxExposureUsd: 15_000, otherPositions: [{ 'BTC-USD': { qty: '110', avgPrice: '90' } }] };
    expect(roomFor('BTC-USD', book.positions, prices, 8_000, limits, account)).toEqual({ qty: 20, limit: 'account_limit' });
    // At a live venue the room keeps the slippage allowance twice (the quote may be 50 bps up, and is valued 50 bps over it).
    const live = roomFor('BTC-USD', book.positions, prices, 8_000, limits, undefined, 50);
    expect(live.qty).toBeCloseTo(140 / 1.005 ** 2, 9);
    expect(live.qty * 100 * 1.005 * 1.005 + 2_000).toBeCloseTo(16_000, 6);
    // A book past the limits already leaves none.
    expect(roomFor('BTC-USD', book.positions, prices, 8_000, { ...limits, maxLeverage: 0.1 }).qty).toBe(0);
  });
});

describe('assessOrder', () => {
  const before = markToMarket(book, prices);
  const assess = (order: { symbol: string; delta: number } | null, overrides: Partial<Parameters<typeof assessOrder>[0]> = {}) =>
    assessOrder({ limits, killSwitch: 'off', positions: book.positions, prices, before, order, ...overrides });

  it('blocks an order that adds exposure past a limit, naming it; an order that only shrinks passes', () => {
    // 60 → 200 BTC: 20,000 + 2,000 of exposure, 2.75× the equity; 60 → 140 is the room (16,000, 2×).
    const adding = assess({ symbol: 'BTC-USD', delta: 140 });
    expect(adding).toMatchObject({ status: 'blocked', blockedBy: ['fund_limit', 'leverage'], riskAssessment: { outcome: 'blocked', exposureUsd: 8_000, exposureAfterUsd: 22_000 } });
    expect(assess({ symbol: 'BTC-USD', delta: 80 })).toMatchObject({ status: 'completed', blockedBy: [], riskAssessment: { outcome: 'approved', leverageAfter: 2 } });
    const tight = { ...limits, maxLeverage: 0.5 };
    expect(assess({ symbol: 'BTC-USD', delta: -20 }, { limits: tight })).toMatchObject({ status: 'completed', blockedBy: [], riskAssessment: { outcome: 'approved_reducing', breaches: ['fund_limit', 'leverage'] } });
    // A flip is not a reduction.
    expect(assess({ symbol: 'BTC-USD', delta: -120 }, { limits: tight })).toMatchObject({ status: 'blocked' });
    expect(assess(null)).toMatchObject({ status: 'completed', riskAssessment: { outcome: 'no_order' } });
  });

  it('the kill switch: halt stops every order, reduce_only those that add; only a drawdown block is a review', () => {
    expect(assess({ symbol: 'BTC-USD', delta: -1 }, { killSwitch: 'halt' })).toMatchObject({ status: 'halted' });
    expect(assess({ symbol: 'BTC-USD', delta: -1 }, { killSwitch: 'reduce_only' })).toMatchObject({ status: 'completed' });
    expect(assess({ symbol: 'BTC-USD', delta: 1 }, { killSwitch: 'reduce_only' })).toMatchObject({ status: 'halted' });
    expect(REVIEW_LIMITS).toEqual(['drawdown']);
  });
});
