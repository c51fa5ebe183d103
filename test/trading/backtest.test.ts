// A backtest replays a version over the feed on the live code path: over the window a paper runtime ran,
// it makes the same decisions from the same inputs, tick for tick.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, openTradingHarness, strategyBody, type TradingHarness } from './harness.js';

let h: TradingHarness;
beforeAll(async () => {
  h = await openTradingHarness();
});
afterAll(async () => h?.close());

describe('backtest', () => {
  it('reproduces a paper run decision for decision', async () => {
    const { token, strategy, runtimeId } = await launch(h, 'quant', 'Follow the trend. fast=3 slow=8 short=true', { fundLimitUsd: 25_000, maxLeverage: 1.5, maxDrawdownPercent: 50 });
    const ticks: string[] = [];
    for (let i = 0; i < 40; i++) ticks.push(await h.nextMinute());
    const paper = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions?limit=100`, token)).body.data.reverse();
    expect(paper).toHaveLength(40);
    expect(paper.filter((e: any) => e.order?.status === 'filled').length).toBeGreaterThan(2);

    const backtest = await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, token, {
      from: ticks[0],
      to: ticks.at(-1),
      fundLimitUsd: 25_000,
      maxLeverage: 1.5,
      maxDrawdownPercent: 50,
    });
    expect(backtest.status).toBe(200);
    const replay = backtest.body.data;
    expect(replay).toMatchObject({ strategyVersionId: strategy.latestVersion.id, strategyVersionHash: strategy.latestVersion.contentHash, ticks: 40, stoppedAt: null });
    const pick = (e: any) => ({ scheduledAt: e.scheduledAt, status: e.status, inputsDigest: e.inputsDigest, decision: e.decision, riskAssessment: e.riskAssessment, order: e.order });
    expect(replay.executions.map(pick)).toEqual(paper.map(pick));
    const runtime = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data;
    expect(replay.book.trades).toBe(runtime.book.trades);
    expect(replay.book.cashUsd).toBe(runtime.book.cashUsd);
  });

  it('refuses windows in the future, inverted or too long, and strategies the user cannot see', async () => {
    const { token, strategy } = await launch(h, 'tester');
    const now = h.clock.now().getTime();
    const body = (from: number, to: number) => ({ from: new Date(from).toISOString(), to: new Date(to).toISOString(), fundLimitUsd: 1000, maxLeverage: 1, maxDrawdownPercent: 10 });
    for (const [from, to] of [
      [now - 60_000, now + 120_000],
      [now - 60_000, now - 120_000],
      [now - 20_000 * 60_000, now],
    ]) {
      const refused = await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, token, body(from!, to!));
      expect(refused).toMatchObject({ status: 400, body: { data: { reason: 'invalid_backtest_window' } } });
    }
    // Work is bounded too: 2,000 ticks × 20 symbols × 200 candles each is refused.
    const universe = Array.from({ length: 20 }, (_, i) => `S${i}-USD`);
    const wide = (await h.call('POST', '/agentic-trading/strategies', token, strategyBody('fast=50 slow=200', { universe, candleInterval: '1d' }))).body.data;
    const tooMuch = await h.call('POST', `/agentic-trading/strategies/${wide.id}/backtest`, token, body(now - 2000 * 60_000, now));
    expect(tooMuch).toMatchObject({ status: 400, body: { data: { reason: 'invalid_backtest_window' } } });
    // And the feed's work: a daily tick over 9,999 days of 1d candles reads few candles (9,999 × 20 × 20 =
    // 4.0M) but computes 20 symbols × ~10,000 candles × 1,440 minute prices.
    const daily = (await h.call('POST', '/agentic-trading/strategies', token, strategyBody('fast=5 slow=20', { universe, candleInterval: '1d' }))).body.data;
    const longAgo = await h.call('POST', `/agentic-trading/strategies/${daily.id}/backtest`, token, { ...body(now - 9_999 * 86_400_000, now), cronExpression: '0 0 * * *' });
    expect(longAgo).toMatchObject({ status: 400, body: { data: { reason: 'invalid_backtest_window' } } });
    expect(longAgo.body.message).toMatch(/minute prices/);
    const mallory = await h.app.identityToken('mallory');
    expect((await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, mallory, body(now - 600_000, now))).status).toBe(404);
  });
});
