// quant_signal rules through the API and scheduled ticks: a definition refused in the schema's words, an entry
// on an indicator cross carrying the rules' protective levels, and the position closed again by a level or an
// exit condition, each recorded in the execution's decision.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTradingHarness, runtimeBody, type TradingHarness } from './harness.js';

let h: TradingHarness;
beforeAll(async () => {
  h = await openTradingHarness();
});
afterAll(async () => h?.close());

const rules = {
  indicators: { fast: { type: 'ema', period: 3 }, slow: { type: 'ema', period: 8 }, rsi: { type: 'rsi', period: 14 } },
  entry: { long: [{ left: 'fast', op: 'crosses_above', right: 'slow' }], short: [] },
  exit: { long: [{ left: 'fast', op: 'crosses_below', right: 'slow' }] },
  sizing: { exposure: 0.5 },
  stopLossPercent: 0.5,
  takeProfitPercent: 1,
  trailingStopPercent: 0.1,
};
const version = (over: object = {}) => ({ kind: 'quant_signal', schemaVersion: 1, definition: { instructions: 'EMA 3/8 cross, long only.', universe: ['BTC-USD'], dataSources: ['embedded'], candleInterval: '1m', rules: { ...rules, ...over } } });

describe('quant_signal rules', () => {
  it('refuses rules over an indicator that is not defined', async () => {
    const token = await h.app.identityToken('rules-author');
    const refused = await h.call('POST', '/agentic-trading/strategies', token, { name: 'broken', version: version({ entry: { long: [{ left: 'fast', op: '>', right: 'sma50' }] } }) });
    expect(refused).toMatchObject({ status: 400 });
    expect(JSON.stringify(refused.body)).toContain('sma50: no indicator named sma50');
  });

  it('enters on the cross with the protective levels, and closes by a level or the exit rule', async () => {
    const token = await h.app.identityToken('rules-trader');
    const strategy = (await h.call('POST', '/agentic-trading/strategies', token, { name: 'ema cross', version: version() })).body.data;
    const account = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, { name: 'rules' })).body.data;
    const runtime = (await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(strategy.latestVersion.id, account.id))).body.data;
    await h.settle();
    const last = async () => (await h.call('GET', `/agentic-trading/runtimes/${runtime.id}/executions?limit=1`, token)).body.data[0];
    let entry;
    for (let i = 0; i < 240 && !entry; i++) {
      await h.nextMinute();
      const execution = await last();
      if (execution.order) entry = execution;
    }
    expect(entry).toMatchObject({ status: 'completed', decision: { kind: 'quant_signal', rules: true, action: 'buy' }, order: { side: 'buy', status: 'filled', trailingStopPercent: 0.1 } });
    const signal = entry.decision.signals[0];
    expect(signal).toMatchObject({ target: 'long', because: ['fast crosses_above slow'], values: { fast: expect.any(Number), slow: expect.any(Number) } });
    expect(signal.values.fast).toBeGreaterThan(signal.values.slow);
    expect(entry.order.stopLoss).toBeCloseTo(signal.price * 0.995, 6);
    expect(entry.order.takeProfit).toBeCloseTo(signal.price * 1.01, 6);
    expect(entry.order.notionalUsd).toBeCloseTo(5_000, -2); // exposure 0.5 of 10,000
    const position = (await h.call('GET', `/agentic-trading/runtimes/${runtime.id}`, token)).body.data.book.positions[0];
    expect(position).toMatchObject({ stopLoss: entry.order.stopLoss, takeProfit: entry.order.takeProfit });

    let exit;
    for (let i = 0; i < 240 && !exit; i++) {
      await h.nextMinute();
      const execution = await last();
      if (execution.order) exit = execution;
    }
    expect(exit.order).toMatchObject({ side: 'sell', status: 'filled' });
    // Either a level (trailing stop, stop-loss, take-profit) or the exit rule closed it, and said which.
    if (exit.decision.kind === 'exit') expect(['trailing_stop', 'stop_loss', 'take_profit']).toContain(exit.decision.reason);
    else expect(exit.decision.signals[0]).toMatchObject({ target: 'flat', because: ['fast crosses_below slow'] });
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtime.id}`, token)).body.data.book.positions).toEqual([]);
  });
});
