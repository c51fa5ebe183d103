import { describe, expect, it } from 'vitest';
import { applyFill, openBook } from '../engine/book.js';
import { dec } from '../engine/money.js';
import { tradeList, tradesCsv, type TradeFill } from './trade-list.js';

const fill = (at: number, symbol: string, side: 'buy' | 'sell', size: string, price: number, feeUsd: number, reason = 'signal'): TradeFill => ({
  at: new Date(Date.UTC(2024, 0, 1, at)).toISOString(),
  symbol,
  side,
  size,
  price,
  feeUsd,
  reason,
});
const hour = (h: number) => new Date(Date.UTC(2024, 0, 1, h)).toISOString();

describe('tradeList', () => {
  it('groups fills into round trips: scaled in and out, a flip split by quantity, an open trade marked', () => {
    const fills = [
      fill(0, 'BTC-USD', 'buy', '1', 100, 0.1),
      fill(1, 'BTC-USD', 'buy', '1', 110, 0.11), // grows: entry 105 on 2
      fill(2, 'BTC-USD', 'sell', '0.5', 120, 0.06), // shrinks
      fill(3, 'BTC-USD', 'sell', '2.5', 90, 0.25, 'stop_loss'), // closes 1.5, opens a short of 1
      fill(4, 'BTC-USD', 'buy', '1', 80, 0.08, 'take_profit'),
      fill(5, 'ETH-USD', 'buy', '3', 10, 0.03),
    ];
    const trades = tradeList(fills, { 'ETH-USD': 12 });
    expect(trades).toHaveLength(3);
    const [long, short, eth] = trades;
    // Long: entries 1×100 + 1×110 = 210; exits 0.5×120 + 1.5×90 = 195; fees 0.1 + 0.11 + 0.06 + 0.25 × 1.5/2.5.
    expect(long).toMatchObject({ symbol: 'BTC-USD', side: 'long', status: 'closed', entryAt: hour(0), exitAt: hour(3), entryPrice: 105, exitPrice: 97.5, size: '2', fills: 4, exitReason: 'stop_loss', markPrice: null });
    expect(long!.feesUsd).toBeCloseTo(0.42, 12);
    expect(long!.pnlUsd).toBeCloseTo(-15, 12);
    expect(long!.netPnlUsd).toBeCloseTo(-15.42, 12);
    expect(long!.returnPercent).toBeCloseTo((-15.42 / 210) * 100, 12);
    // Short: opened by the flip's other 1 at 90 with 0.25 × 1/2.5 of its fee, covered at 80.
    expect(short).toMatchObject({ side: 'short', status: 'closed', entryAt: hour(3), exitAt: hour(4), entryPrice: 90, exitPrice: 80, size: '1', fills: 2, exitReason: 'take_profit' });
    expect(short!.netPnlUsd).toBeCloseTo(10 - 0.1 - 0.08, 12);
    expect(eth).toMatchObject({ symbol: 'ETH-USD', status: 'open', exitAt: null, exitPrice: null, exitReason: null, markPrice: 12, pnlUsd: 6 });
    expect(eth!.netPnlUsd).toBeCloseTo(5.97, 12);
  });

  it("adds up to the book's change: the trades' net P&L is cash and positions at the marks less the start, to the digit", () => {
    const fills: TradeFill[] = [];
    let book = openBook(10_000);
    let qty = dec(0);
    // A hundred fills of a strategy that scales in and out, closes and flips: sizes and prices that JavaScript numbers would round.
    const targets = ['0.3', '0.51', '0.2', '0', '-0.37', '-0.1', '0.43', '0', '0.1', '-0.29', '0.333333'];
    for (let i = 0; i < 100; i++) {
      const delta = dec(targets[i % targets.length]!).minus(qty);
      if (delta.isZero()) continue;
      const side = delta.isPositive() ? 'buy' : 'sell';
      const size = delta.abs().toFixed();
      const price = 100 + ((i * 37) % 23) * 0.37;
      const fee = Number(delta.abs().times(price).times(0.001).toFixed(2));
      fills.push(fill(i, 'BTC-USD', side, size, price, fee));
      book = applyFill(book, { symbol: 'BTC-USD', side, size, price: String(price), feeUsd: String(fee) });
      qty = qty.plus(delta);
    }
    const mark = 101.5;
    const trades = tradeList(fills, { 'BTC-USD': mark });
    expect(trades.length).toBe(46);
    expect(trades.filter((t) => t.status === 'open')).toHaveLength(1);
    const equityChange = dec(book.cashUsd).plus(dec(book.positions['BTC-USD']?.qty ?? 0).times(mark)).minus(10_000);
    const net = trades.reduce((sum, t) => sum.plus(t.netPnlUsd), dec(0));
    expect(net.minus(equityChange).abs().toNumber()).toBeLessThan(1e-9);
    const fees = trades.reduce((sum, t) => sum + t.feesUsd, 0);
    expect(fees).toBeCloseTo(Number(book.feesUsd), 9);
  });

  it('writes the CSV with a header and a line per trade', () => {
    const csv = tradesCsv(tradeList([fill(0, 'BTC-USD', 'buy', '0.5', 100, 0.05), fill(1, 'BTC-USD', 'sell', '0.5', 104, 0.06)]));
    expect(csv.split('\r\n')).toEqual([
      'symbol,side,status,entry_at,entry_price,exit_at,exit_price,size,fills,fees_usd,pnl_usd,net_pnl_usd,return_percent,exit_reason,mark_price',
      `BTC-USD,long,closed,${hour(0)},100,${hour(1)},104,0.5,2,0.11,2,1.89,3.78,signal,`,
      '',
    ]);
  });
});
