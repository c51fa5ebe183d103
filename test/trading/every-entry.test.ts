// Issue 42: a tick places one order per symbol, each sized as much as the limits allow. Two cases that lost
// entries run to the end with every one, as paper runtimes and as the backtests that reproduce them: a winning
// unlevered strategy whose re-entry is past fundLimitUsd × maxLeverage (it was blocked: the backtest stopped
// and the runtime went to review), and two symbols crossing on one candle (the second never entered: a tick
// placed one order, and a crossing lasts one tick).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedFeed, type MarketDataProvider } from '../../src/modules/trading/data/market-data.js';
import { openTradingHarness, runtimeBody, strategyBody, type TradingHarness } from './harness.js';

/** The embedded feed, but TWINA-USD and TWINB-USD both quote BTC-USD's prices: they cross on the same candles. */
const embedded = new EmbeddedFeed();
const quoted = (symbol: string) => (symbol.startsWith('TWIN') ? 'BTC-USD' : symbol);
const twins: MarketDataProvider = {
  name: 'embedded',
  supports: (symbol) => embedded.supports(symbol),
  candles: (symbol, interval, at, count) => embedded.candles(quoted(symbol), interval, at, count),
  price: (symbol, at) => embedded.price(quoted(symbol), at),
};

let h: TradingHarness;
beforeAll(async () => {
  h = await openTradingHarness({ feeds: [twins] });
});
afterAll(async () => h?.close());

const LIMITS = { fundLimitUsd: 10_000, maxLeverage: 1, maxDrawdownPercent: 50 };

/** A user's strategy of `definition`, an account and an active runtime of it at LIMITS. */
async function launchWith(sub: string, definition: Record<string, unknown>) {
  const token = await h.app.identityToken(sub);
  const strategy = (await h.call('POST', '/agentic-trading/strategies', token, strategyBody('Trend follow.', definition))).body.data;
  const account = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, { name: 'main' })).body.data;
  const runtime = (await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(strategy.latestVersion.id, account.id, LIMITS))).body.data;
  await h.settle();
  return { token, strategy, runtimeId: runtime.id as string };
}

/** Every execution of the runtime, oldest first (a tick's legs in their order). */
async function executionsOf(token: string, runtimeId: string) {
  const all = [];
  for (let before = ''; ; ) {
    const page = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions?limit=100${before}`, token)).body.data;
    all.push(...page);
    if (page.length < 100) return all.reverse();
    before = `&before=${page.at(-1).id}`;
  }
}

/** The paper run's ticks replayed: the backtest's executions, every page of them. */
async function backtestOf(token: string, strategyId: string, ticks: string[]) {
  const body = { from: ticks[0], to: ticks.at(-1), ...LIMITS, executionsLimit: 500 };
  const replay = await h.call('POST', `/agentic-trading/strategies/${strategyId}/backtest`, token, body);
  expect(replay.status).toBe(200);
  return replay.body.data;
}

const pick = (e: any) => ({ scheduledAt: e.scheduledAt, status: e.status, inputsDigest: e.inputsDigest, decision: e.decision, riskAssessment: e.riskAssessment, order: e.order });
const filledBuys = (executions: any[], symbol: string) => executions.filter((e) => e.order?.symbol === symbol && e.order.side === 'buy' && e.order.status === 'filled');

describe('every entry', () => {
  it('a winning unlevered strategy runs every tick: a re-entry past fundLimitUsd × maxLeverage is cut to it, not blocked', async () => {
    // The defaults (fast=5 slow=20, exposure 1: the whole equity), 10,000 at leverage 1. Over these 145 minutes it
    // wins, and its next entry asks for more than 10,000.
    const { token, strategy, runtimeId } = await launchWith('winner', {});
    const ticks: string[] = [];
    for (let i = 0; i < 145; i++) ticks.push(await h.nextMinute());
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data).toMatchObject({ status: 'active', statusReason: null });
    const paper = await executionsOf(token, runtimeId);
    expect(new Set(paper.map((e) => e.scheduledAt)).size).toBe(145);
    expect(paper.filter((e) => e.status !== 'completed')).toEqual([]);
    // Every buy the strategy decided filled; the entries after the win were cut to the limit, and say so.
    const buys = paper.filter((e) => e.decision.action === 'buy');
    expect(buys.length).toBeGreaterThan(2);
    expect(buys.filter((e) => e.order?.status !== 'filled')).toEqual([]);
    const cut = buys.filter((e) => e.decision.capped);
    expect(cut.length).toBeGreaterThan(0);
    for (const e of cut) {
      expect(e.decision.capped).toMatchObject({ limit: 'fund_limit', size: e.order.size });
      expect(Number(e.decision.capped.requestedSize)).toBeGreaterThan(Number(e.order.size));
      expect(e.riskAssessment.exposureAfterUsd).toBeCloseTo(10_000, 2);
      expect(e.riskAssessment.exposureAfterUsd).toBeLessThanOrEqual(10_000 * (1 + 1e-9));
    }

    const replay = await backtestOf(token, strategy.id, ticks);
    expect(replay).toMatchObject({ ticks: 145, stoppedAt: null, stopReason: null, executionsTotal: paper.length });
    expect(replay.executions.map(pick)).toEqual(paper.map(pick));
    expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'paused' })).status).toBe(200);
  });

  it('two symbols crossing on one candle both enter, every time', async () => {
    const rules = {
      indicators: { fast: { type: 'sma', period: 3 }, slow: { type: 'sma', period: 8 } },
      entry: { long: [{ left: 'fast', op: 'crosses_above', right: 'slow' }] },
      exit: { long: [{ left: 'fast', op: 'crosses_below', right: 'slow' }] },
    };
    const { token, strategy, runtimeId } = await launchWith('twins', { universe: ['TWINA-USD', 'TWINB-USD'], rules });
    const ticks: string[] = [];
    for (let i = 0; i < 60; i++) ticks.push(await h.nextMinute());
    const paper = await executionsOf(token, runtimeId);
    // Each crossing above: both symbols' signals say long on that tick, and each has its own filled buy there.
    const crossings = [...new Set(paper.filter((e) => e.decision.signals?.some((s: any) => s.target === 'long')).map((e) => e.scheduledAt))];
    expect(crossings.length).toBeGreaterThan(3);
    for (const at of crossings) {
      const legs = paper.filter((e) => e.scheduledAt === at);
      expect(legs.map((e) => [e.leg, e.order?.symbol, e.order?.side, e.order?.status])).toEqual([
        [0, 'TWINA-USD', 'buy', 'filled'],
        [1, 'TWINB-USD', 'buy', 'filled'],
      ]);
    }
    expect(filledBuys(paper, 'TWINB-USD').map((e) => e.scheduledAt)).toEqual(crossings);
    expect(filledBuys(paper, 'TWINA-USD').map((e) => e.scheduledAt)).toEqual(crossings);
    // And both leave on the same candles: each exit is an order of its own.
    const sells = (symbol: string) => paper.filter((e) => e.order?.symbol === symbol && e.order.side === 'sell' && e.order.status === 'filled').map((e) => e.scheduledAt);
    expect(sells('TWINB-USD')).toEqual(sells('TWINA-USD'));
    expect(sells('TWINA-USD').length).toBeGreaterThan(2);

    const replay = await backtestOf(token, strategy.id, ticks);
    expect(replay).toMatchObject({ ticks: 60, stoppedAt: null });
    expect(replay.executions.map(pick)).toEqual(paper.map(pick));
  });
});
