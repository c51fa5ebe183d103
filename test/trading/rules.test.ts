// quant_signal rules through the API and scheduled ticks: a definition refused in the schema's words, an entry
// on an indicator cross carrying the rules' protective levels, and the position closed again by a level or an
// exit condition, each recorded in the execution's decision; under the kill switch's halt a level still closes.
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
  it("under the kill switch's halt a protective level still closes its position, and the strategy enters nothing", async () => {
    const token = await h.app.identityToken('rules-halted');
    // Long whenever flat, with levels 0.05 % either side: the entry is at once, a level is met within minutes.
    const always = { indicators: { fast: { type: 'sma', period: 2 } }, entry: { long: [{ left: 'price', op: '>', right: 0 }] }, sizing: { exposure: 0.5 }, stopLossPercent: 0.05, takeProfitPercent: 0.05 };
    const strategy = (await h.call('POST', '/agentic-trading/strategies', token, { name: 'tight levels', version: { ...version(), definition: { ...version().definition, rules: always } } })).body.data;
    const account = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, { name: 'halted' })).body.data;
    const runtime = (await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(strategy.latestVersion.id, account.id))).body.data;
    await h.settle();
    const last = async () => (await h.call('GET', `/agentic-trading/runtimes/${runtime.id}/executions?limit=1`, token)).body.data[0];
    await h.nextMinute();
    expect(await last()).toMatchObject({ order: { side: 'buy', status: 'filled' } });
    expect((await h.call('PUT', `/agentic-trading/accounts/${account.id}/kill-switch`, token, { mode: 'halt' })).status).toBe(200);
    let exit;
    for (let i = 0; i < 120 && !exit; i++) {
      await h.nextMinute();
      const execution = await last();
      if (execution.decision?.kind === 'exit') exit = execution;
      // Until then the position is held, and nothing new is placed.
      else expect(execution.order).toBeNull();
    }
    // It used to be recorded halted with the position left open past its stop.
    expect(exit).toMatchObject({ status: 'completed', order: { side: 'sell', status: 'filled' }, riskAssessment: { killSwitch: 'halt', outcome: 'approved' } });
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtime.id}`, token)).body.data.book.positions).toEqual([]);
    // Flat now, the rules want long again: halted.
    await h.nextMinute();
    expect(await last()).toMatchObject({ status: 'halted', decision: { action: 'buy' }, order: { side: 'buy', status: 'blocked' } });
  });
});
