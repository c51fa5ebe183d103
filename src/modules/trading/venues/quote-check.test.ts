import { describe, expect, it } from 'vitest';
import { openBook, type Book } from '../engine/book.js';
import { checkAtQuote, type DecidedRisk, type QuoteCheckInput } from './quote-check.js';

// The last look before a live venue's order is sent: valued at the venue's executable quote plus the allowance.
const limits = { fundLimitUsd: 10_000, maxLeverage: 2 };
const flat = openBook(10_000);
const long = (qty: string, avgPrice: string): Book => ({ ...flat, positions: { 'BTC-USD': { qty, avgPrice } } });
/** What the decision recorded: an empty book of 10,000 equity taking `afterUsd` of exposure. */
const decided = (afterUsd: number, extra: Partial<DecidedRisk> = {}): DecidedRisk => ({
  equityUsd: 10_000,
  exposureUsd: 0,
  exposureAfterUsd: afterUsd,
  checks: [
    { name: 'fund_limit', value: afterUsd, limit: 20_000 },
    { name: 'leverage', value: afterUsd / 10_000, limit: 2 },
  ],
  ...extra,
});
const buy = (size: string, overrides: Partial<QuoteCheckInput> = {}): QuoteCheckInput => ({
  order: { symbol: 'BTC-USD', side: 'buy', size, referencePrice: 90_000 },
  quote: { bid: '89995', ask: '90005' },
  book: flat,
  limits,
  decided: decided(Number(size) * 90_000),
  maxSlippageBps: 50,
  ...overrides,
});

describe('an order re-checked at the venue quote', () => {
  it('is sent when the ask is within the allowance of the decided price and the limits hold at ask plus the allowance', () => {
    expect(checkAtQuote(buy('0.21111'))).toBeNull();
    // The ask moved 20 bps up between the decision and the send: still inside 50 bps, and 0.21111 × 90,185 × 1.005 < 20,000.
    expect(checkAtQuote(buy('0.21111', { quote: { bid: '90175', ask: '90185' } }))).toBeNull();
  });

  it('is not sent when the ask moved past the allowance, or when the order was decided on prices that are not the venue’s (the 20× case)', () => {
    expect(checkAtQuote(buy('0.1', { quote: { bid: '90900', ask: '90910' } }))).toMatchObject({ code: 'price_moved', message: expect.stringContaining('101.1 bps above the 90000') });
    // Embedded BTC-USD ≈ 4,400: 2.26 BTC decided as $9,950, at an exchange asking 90,000 it is $203,000.
    const embedded = buy('2.26136', { order: { symbol: 'BTC-USD', side: 'buy', size: '2.26136', referencePrice: 4_400 }, quote: { bid: '89990', ask: '90010' }, decided: decided(9_950) });
    expect(checkAtQuote(embedded)).toMatchObject({ code: 'price_moved' });
    // A sell into a bid that fell past the allowance (opening a short) likewise.
    expect(checkAtQuote({ ...buy('0.1'), order: { symbol: 'BTC-USD', side: 'sell', size: '0.1', referencePrice: 90_000 }, quote: { bid: '89500', ask: '89510' } })).toMatchObject({ code: 'price_moved' });
  });

  it('is not sent when, valued at the ask plus the allowance, it takes the book past fundLimit × leverage, leverage or the account limit', () => {
    // Decided at the cap: 0.22222 × 90,000 = 19,999.80; at 90,005 × 1.005 it is 20,100.92.
    expect(checkAtQuote(buy('0.22222'))).toMatchObject({ code: 'limit_at_quote', message: expect.stringContaining('fund_limit: gross exposure 20100.92 USD > 20000.00') });
    // A book that lost half its equity since the peak: leverage binds before the fund limit.
    expect(checkAtQuote(buy('0.1', { decided: decided(9_000, { equityUsd: 4_500 }) }))).toMatchObject({ code: 'limit_at_quote', message: expect.stringContaining('leverage: 2.0101 > 2') });
    // The account's other runtimes hold 10,000 under a 19,000 limit: this 9,000 decided fits only at 90,000.
    const account = decided(9_000, { checks: [{ name: 'account_limit', value: 19_000, limit: 19_000 }] });
    expect(checkAtQuote(buy('0.1', { decided: account }))).toMatchObject({ code: 'limit_at_quote', message: expect.stringContaining('account_limit: 19045.50 USD > 19000.00') });
    // A claim recorded without its assessment is checked for the price alone.
    expect(checkAtQuote(buy('0.22222', { decided: null }))).toBeNull();
  });

  it('always sends an order that only shrinks a position, whatever the quote (a limit never traps a position), but checks one that flips it', () => {
    const book = long('0.3', '95000');
    const crashed = { bid: '60000', ask: '60010' };
    const sell = (size: string) => ({ ...buy(size), order: { symbol: 'BTC-USD', side: 'sell' as const, size, referencePrice: 90_000 }, book, quote: crashed, decided: decided(0, { exposureUsd: 27_000 }) });
    expect(checkAtQuote(sell('0.3'))).toBeNull();
    expect(checkAtQuote(sell('0.1'))).toBeNull();
    expect(checkAtQuote(sell('0.5'))).toMatchObject({ code: 'price_moved' });
  });
});
