import { describe, expect, it } from 'vitest';
import { CcxtVenue } from './ccxt-venue.js';
import { OrderRejected, OrderUnfilled } from './venue.js';

// What a ccxt order answer books (the exchange calls themselves run against a Binance stand-in in
// test/trading/ccxt-venue.test.ts): fees counted once, whichever way ccxt lists them.
const venue = new CcxtVenue({ exchange: 'kraken', apiKey: 'k', secret: 's', sandbox: true, apiUrl: null, symbols: {}, timeoutMs: 1_000 });
const fillOf = (order: Parameters<CcxtVenue['fillOf']>[2]) => venue['fillOf']('BTC-USD', 'buy', order);

describe('a ccxt order answer', () => {
  it('counts a fee once when ccxt gives it in `fee` and again (a copy) in `fees`', () => {
    const fee = { cost: 0.26, currency: 'USD' };
    expect(fillOf({ status: 'closed', side: 'buy', filled: 1, average: 100, fee, fees: [{ ...fee }] })).toEqual({ symbol: 'BTC-USD', side: 'buy', size: '1', price: '100', feeUsd: '0.26' });
    expect(fillOf({ status: 'closed', side: 'buy', filled: 1, average: 100, fee })).toMatchObject({ feeUsd: '0.26' });
    // Two fills' fees, `fee` their sum as some parsers set it: `fees` is the list.
    expect(fillOf({ status: 'closed', side: 'buy', filled: 1, average: 100, fee: { cost: 0.3, currency: 'USD' }, fees: [{ cost: 0.1, currency: 'USD' }, { cost: 0.2, currency: 'USD' }] })).toMatchObject({ feeUsd: '0.3' });
  });

  it('books a fee taken in the asset bought as the amount held back, worth its USD at the fill price', () => {
    expect(fillOf({ status: 'closed', side: 'buy', filled: 1, average: 100, fees: [{ cost: 0.001, currency: 'BTC' }] })).toMatchObject({ size: '0.999', feeUsd: '0.1' });
  });

  it('an order that ended with nothing filled: unfilled for an immediate-or-cancel limit order, a rejection otherwise', () => {
    expect(() => fillOf({ status: 'expired', type: 'limit', filled: 0 })).toThrow(OrderUnfilled);
    expect(() => fillOf({ status: 'expired', type: 'market', filled: 0 })).toThrow(OrderRejected);
    expect(() => fillOf({ status: 'rejected', type: 'limit', filled: 0 })).toThrow(OrderRejected);
  });
});
