// llm_agent runtimes end to end: each tick asks the account's model (stand-ins of the three providers over
// their real wire protocols) for a structured decision, records it, and places the one order it asks for;
// an invalid, refused or late answer places nothing; a stop-loss closes the position on a later tick; and
// backtests reuse the decisions kept for the same inputs, under maxModelCalls.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dec, feeUsd } from '../../src/modules/trading/engine/money.js';
import { openTradingHarness, runtimeBody, type TradingHarness } from './harness.js';
import { startModelStandIn, type ModelStandIn, type Provider } from './model-stand-in.js';

const KEYS = { openai: 'sk-openai-test-key-1234', anthropic: 'sk-ant-test-key-5678', openrouter: 'sk-or-test-key-9012' };
let h: TradingHarness;
let model: ModelStandIn;

beforeAll(async () => {
  model = await startModelStandIn(KEYS);
  h = await openTradingHarness({}, ['api'], { ...model.env(), TRADING_MODEL_TIMEOUT_MS: '3000' });
});
afterAll(async () => {
  await h?.close();
  await model?.close();
});

const agentVersion = (provider: Provider, instructions: string, extra: Record<string, unknown> = {}) => ({
  kind: 'llm_agent',
  schemaVersion: 1,
  definition: { instructions, universe: ['BTC-USD'], dataSources: ['embedded'], candleInterval: '1m', model: { provider, model: `${provider}-trader-1` }, lookback: 10, ...extra },
});

/** Buys $1,000 with a stop just under the price while flat; holds otherwise. */
const buyWhenFlat = (asked: { prompt: any }) => {
  const btc = asked.prompt.universe[0];
  if (asked.prompt.book.positions.length > 0) return { input: { orders: [], rationale: 'holding' } };
  return { input: { orders: [{ symbol: 'BTC-USD', side: 'buy', notionalUsd: 1_000, type: 'market', stopLoss: btc.price * 0.9995 }], rationale: 'flat: enter long' } };
};

async function launchAgent(sub: string, provider: Provider, withKey = true, extra: Record<string, unknown> = {}) {
  const token = await h.app.identityToken(sub);
  // The instructions name the runtime, so each test's requests can be told apart at the stand-in.
  const instructions = `${sub}: buy 1,000 USD of BTC when flat, with a stop 0.05 % below.`;
  const strategy = (await h.call('POST', '/agentic-trading/strategies', token, { name: `${provider} agent`, version: agentVersion(provider, instructions, extra) })).body.data;
  const account = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, { name: 'agent' })).body.data;
  if (withKey) expect((await h.call('PUT', `/agentic-trading/accounts/${account.id}/providers`, token, { provider, apiKey: KEYS[provider] })).status).toBe(200);
  const runtime = (await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(strategy.latestVersion.id, account.id))).body.data;
  await h.settle();
  return { token, strategy, account, runtimeId: runtime.id as string, asked: () => model.asked.filter((a) => a.prompt.instructions === instructions) };
}

const lastExecution = async (token: string, runtimeId: string) => (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions?limit=1`, token)).body.data[0];
const pause = (token: string, runtimeId: string) => h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'paused' });

describe('llm_agent runtimes', () => {
  it('keys are set per account and listed masked; another user cannot see or set them', async () => {
    const token = await h.app.identityToken('keyholder');
    const account = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, { name: 'keys' })).body.data;
    const set = await h.call('PUT', `/agentic-trading/accounts/${account.id}/providers`, token, { provider: 'openai', apiKey: KEYS.openai });
    expect(set.body.data).toEqual({ provider: 'openai', apiKey: 'sk-o…1234' });
    const listed = (await h.call('GET', `/agentic-trading/accounts/${account.id}/providers`, token)).body.data;
    expect(listed).toMatchObject([{ provider: 'openai', apiKey: 'sk-o…1234' }]);
    expect(JSON.stringify(listed)).not.toContain(KEYS.openai);
    const mallory = await h.app.identityToken('mallory');
    expect((await h.call('GET', `/agentic-trading/accounts/${account.id}/providers`, mallory)).status).toBe(404);
    expect((await h.call('PUT', `/agentic-trading/accounts/${account.id}/providers`, mallory, { provider: 'openai', apiKey: 'x'.repeat(20) })).status).toBe(404);
    const [row] = await h.app.ctx.database.query<{ sealed: string }>(sql`select sealed_key as sealed from trading_provider_keys where account_id = ${account.id}`);
    expect(row!.sealed).not.toContain(KEYS.openai);
  });

  it.each(['openai', 'anthropic', 'openrouter'] as const)('%s: the model decides, the decision is recorded, its order placed with its stop-loss', async (provider) => {
    model.reply = buyWhenFlat;
    const launched = await launchAgent(`agent-${provider}`, provider);
    const { token, runtimeId } = launched;
    await h.nextMinute();
    const execution = await lastExecution(token, runtimeId);
    const asked = launched.asked();
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ provider, model: `${provider}-trader-1` });
    expect(asked[0]!.prompt).toMatchObject({ instructions: expect.stringContaining('buy 1,000 USD'), candleInterval: '1m', book: { cashUsd: 10_000, positions: [] } });
    expect(asked[0]!.prompt.universe[0].candles).toHaveLength(10);
    expect(execution).toMatchObject({
      status: 'completed',
      decision: {
        kind: 'llm_agent',
        outcome: 'ok',
        model: { provider, model: `${provider}-trader-1`, answeredBy: `${provider}-trader-1` },
        promptDigest: expect.stringMatching(/^sha256:/),
        decision: { rationale: 'flat: enter long' },
        usage: { outputTokens: 42 },
        cached: false,
        action: 'buy',
      },
      order: { symbol: 'BTC-USD', side: 'buy', status: 'filled', stopLoss: expect.any(Number) },
    });
    expect(execution.order.notionalUsd).toBeCloseTo(1_000, 0);
    const runtime = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data;
    expect(runtime.book.positions).toMatchObject([{ symbol: 'BTC-USD', stopLoss: execution.order.stopLoss }]);
    await pause(token, runtimeId);
  });

  it('an invalid, refused or late answer places nothing and is recorded; a missing key is refused without a call', async () => {
    const { token, runtimeId, account } = await launchAgent('agent-bad', 'openai');
    const cases: Array<[() => void, string, RegExp]> = [
      [() => (model.reply = () => ({ input: { orders: [{ symbol: 'BTC-USD', side: 'buy', size: 1, notionalUsd: 5, type: 'market' }], rationale: 'both' } })), 'invalid', /exactly one of size and notionalUsd/],
      [() => (model.reply = () => ({ input: { orders: [{ symbol: 'ETH-USD', side: 'buy', size: 1, type: 'market' }], rationale: 'elsewhere' } })), 'invalid', /ETH-USD is not in the universe/],
      [() => (model.reply = () => ({ text: "I can't help with trading." })), 'invalid', /without calling submit_decision: I can't help/],
      [() => (model.reply = () => ({ status: 500 })), 'refused', /openai answered 500/],
      [() => ((model.reply = buyWhenFlat), (model.delayMs = 5_000)), 'late', /did not answer within 3000 ms/],
    ];
    for (const [arrange, outcome, error] of cases) {
      arrange();
      await h.nextMinute();
      const execution = await lastExecution(token, runtimeId);
      expect(execution, outcome).toMatchObject({ status: 'completed', order: null, decision: { kind: 'llm_agent', outcome, action: 'hold' } });
      expect(execution.decision.error).toMatch(error);
    }
    model.delayMs = 0;
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data.book).toMatchObject({ trades: 0, positions: [] });

    const keyless = await launchAgent('agent-keyless', 'anthropic', false);
    await h.nextMinute();
    expect(keyless.asked()).toEqual([]);
    expect(await lastExecution(keyless.token, keyless.runtimeId)).toMatchObject({ order: null, decision: { outcome: 'refused', error: expect.stringContaining('no anthropic key') } });
    await pause(token, runtimeId);
    await pause(keyless.token, keyless.runtimeId);
    expect(account.id).toBeTruthy();
  });

  it('a limit order goes on the tick and is immediate-or-cancel, as live: inside the spread nothing fills, at the touch it takes; an order under the minimum notional places nothing', async () => {
    const { token, runtimeId } = await launchAgent('agent-limit', 'openai');
    let limitAsked = 0;
    model.reply = (asked) => {
      limitAsked = asked.prompt.universe[0].price * 1.000123;
      return { input: { orders: [{ symbol: 'BTC-USD', side: 'buy', size: 0.0123456789, type: 'limit', limitPrice: limitAsked }], rationale: 'bid just above' } };
    };
    await h.nextMinute();
    const limit = await lastExecution(token, runtimeId);
    // Down onto the cent for a buy, and whole lots of 0.000001 down too.
    const onTick = (Math.floor(limitAsked * 100) / 100).toFixed(2);
    // Inside the spread (1.23 bps over the price, the touch 5 bps): nothing meets it now, so it is cancelled as an IOC
    // order is at a live venue; it used to fill at its own price as maker. The book is untouched, the runtime runs on.
    expect(limit).toMatchObject({ status: 'completed', order: { status: 'unfilled', limitPrice: String(Number(onTick)), size: '0.012345', price: null, feeUsd: null } });
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data).toMatchObject({ status: 'active', book: { trades: 0, positions: [] } });

    // Through the touch (10 bps over the price): it takes the touch, 5 bps over the price, with the taker fee.
    model.reply = (asked) => ({ input: { orders: [{ symbol: 'BTC-USD', side: 'buy', size: 0.0123456789, type: 'limit', limitPrice: asked.prompt.universe[0].price * 1.001 }], rationale: 'bid through the touch' } });
    await h.nextMinute();
    const taken = await lastExecution(token, runtimeId);
    const touch = dec(taken.order.referencePrice).times(1.0005).toDecimalPlaces(2, 0);
    expect(taken).toMatchObject({ status: 'completed', order: { status: 'filled', size: '0.012345', price: touch.toNumber() } });
    expect(taken.order.feeUsd).toBe(feeUsd(dec('0.012345').times(touch), 10).toNumber());

    // A tenth of a cent above the price: marketable as asked, not once on the tick (down to the cent, under the price).
    model.reply = (asked) => ({ input: { orders: [{ symbol: 'BTC-USD', side: 'buy', size: 0.01, type: 'limit', limitPrice: asked.prompt.universe[0].price + 0.001 }], rationale: 'bid at the touch' } });
    await h.nextMinute();
    expect(await lastExecution(token, runtimeId)).toMatchObject({ status: 'completed', order: null, decision: { action: 'hold', unfilled: 'limit_not_marketable', limitPrice: expect.any(String) } });

    model.reply = () => ({ input: { orders: [{ symbol: 'BTC-USD', side: 'buy', notionalUsd: 0.5, type: 'market' }], rationale: 'a little more' } });
    await h.nextMinute();
    const tiny = await lastExecution(token, runtimeId);
    expect(tiny).toMatchObject({ status: 'completed', order: null, decision: { action: 'hold', belowMinimum: { symbol: 'BTC-USD', minNotionalUsd: '1' } } });
    await pause(token, runtimeId);
  });

  it("the order's stop-loss closes the position on a later tick without asking the model", async () => {
    model.reply = buyWhenFlat;
    const launched = await launchAgent('agent-stopped', 'anthropic');
    const { token, runtimeId } = launched;
    await h.nextMinute();
    expect(await lastExecution(token, runtimeId)).toMatchObject({ order: { side: 'buy', status: 'filled' } });
    let exit;
    for (let i = 0; i < 120 && !exit; i++) {
      const asked = launched.asked().length;
      await h.nextMinute();
      const last = await lastExecution(token, runtimeId);
      if (last.decision.kind === 'exit') {
        expect(launched.asked().length).toBe(asked);
        exit = last;
      }
    }
    expect(exit).toMatchObject({ status: 'completed', decision: { kind: 'exit', reason: 'stop_loss', action: 'sell' }, order: { side: 'sell', status: 'filled' } });
    // Met by the tick's price, or by a bar's low since the last tick: it fills from the stop (or a lower open).
    expect(exit.decision.fill.price).toBeLessThanOrEqual(exit.decision.level);
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data.book.positions).toEqual([]);
    await pause(token, runtimeId);
  });

  it('a backtest over the paper window reuses every decision; a new window calls the model under maxModelCalls and stops at it', async () => {
    model.reply = buyWhenFlat;
    const launched = await launchAgent('agent-replayed', 'openrouter');
    const { token, strategy, account, runtimeId } = launched;
    const ticks: string[] = [];
    for (let i = 0; i < 5; i++) ticks.push(await h.nextMinute());
    const last = ticks[4]!;
    await pause(token, runtimeId);
    const paper = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions?limit=10`, token)).body.data.reverse();
    const window = { from: ticks[0], to: last, fundLimitUsd: 10_000, maxLeverage: 2, maxDrawdownPercent: 20, accountId: account.id };
    const asked = launched.asked().length;
    const replay = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, token, { ...window, maxModelCalls: 0 })).body.data;
    expect(launched.asked().length).toBe(asked);
    expect(replay).toMatchObject({ ticks: 5, stoppedAt: null, modelCalls: 0 });
    const pick = (e: any) => ({ inputsDigest: e.inputsDigest, order: e.order && { side: e.order.side, size: e.order.size }, decision: e.decision.decision ?? e.decision.kind });
    expect(replay.executions.map(pick)).toEqual(paper.map(pick));

    const later = { ...window, from: new Date(Date.parse(last) + 60 * 60_000).toISOString(), to: new Date(Date.parse(last) + 70 * 60_000).toISOString() };
    h.clock.set(new Date(Date.parse(later.to) + 60_000));
    const capped = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, token, { ...later, maxModelCalls: 2 })).body.data;
    expect(capped).toMatchObject({ stopReason: 'max_model_calls', modelCalls: 2 });
    // Two ticks asked the model (stop-loss exits between them ask nothing); the third that would is where it stopped.
    expect(capped.executions.filter((e: any) => e.decision.kind === 'llm_agent')).toHaveLength(2);
    const again = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, token, { ...later, maxModelCalls: 2 })).body.data;
    expect(again.executionsTotal).toBeGreaterThan(capped.executionsTotal); // the decisions kept cost nothing this time
    expect(again.executions.slice(0, capped.executionsTotal).map(pick)).toEqual(capped.executions.map(pick));
    const missing = await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, token, later);
    expect(missing).toMatchObject({ status: 400, body: { data: { reason: 'invalid_backtest' } } });
  });

  it("kept decisions are the paying account's: another user backtesting the same public version asks its own model", async () => {
    model.reply = buyWhenFlat;
    const alice = await h.app.identityToken('agent-public-author');
    const instructions = 'agent-public-author: buy 1,000 USD of BTC when flat, with a stop 0.05 % below.';
    const strategy = (await h.call('POST', '/agentic-trading/strategies', alice, { name: 'public agent', visibility: 'public', version: agentVersion('openai', instructions) })).body.data;
    const aliceAccount = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', alice, { name: 'a' })).body.data;
    await h.call('PUT', `/agentic-trading/accounts/${aliceAccount.id}/providers`, alice, { provider: 'openai', apiKey: KEYS.openai });
    const runtime = (await h.call('POST', '/agentic-trading/runtimes', alice, runtimeBody(strategy.latestVersion.id, aliceAccount.id))).body.data;
    await h.settle();
    const ticks = [await h.nextMinute(), await h.nextMinute()];
    await pause(alice, runtime.id);

    const bob = await h.app.identityToken('agent-public-reader');
    const bobAccount = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', bob, { name: 'b' })).body.data;
    const window = { from: ticks[0], to: ticks[1], fundLimitUsd: 10_000, maxLeverage: 2, maxDrawdownPercent: 20, maxModelCalls: 10 };
    // Without a key of his own he gets no decision (refused), not Alice's kept ones.
    const keyless = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, bob, { ...window, accountId: bobAccount.id })).body.data;
    expect(keyless.executions.map((e: any) => e.decision.outcome)).toEqual(['refused', 'refused']);
    await h.call('PUT', `/agentic-trading/accounts/${bobAccount.id}/providers`, bob, { provider: 'openai', apiKey: KEYS.openai });
    const own = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, bob, { ...window, accountId: bobAccount.id })).body.data;
    expect(own.modelCalls).toBeGreaterThan(0);
    // Every model decision is his own (a tick may instead be a stop-loss exit, which asks no model).
    const decided = own.executions.filter((e: any) => e.decision.kind === 'llm_agent');
    expect(decided.length).toBeGreaterThan(0);
    expect(decided.every((e: any) => e.decision.cached === false), JSON.stringify(own.executions.map((e: any) => e.decision))).toBe(true);
    // Alice's own backtest of the window reuses hers.
    const hers = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, alice, { ...window, accountId: aliceAccount.id })).body.data;
    expect(hers.modelCalls).toBe(0);
    // Nor may Bob pay with Alice's account.
    expect((await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, bob, { ...window, accountId: aliceAccount.id })).status).toBe(404);
  });

  it('an oversized answer is cut to the limits and recorded, the runtime runs on; it shorts only with allowShort', async () => {
    const { token, runtimeId, asked } = await launchAgent('agent-oversized', 'openai');
    model.reply = () => ({ input: { orders: [{ symbol: 'BTC-USD', side: 'buy', notionalUsd: 1_000_000, type: 'market' }], rationale: 'all in' } });
    await h.nextMinute();
    expect(asked()[0]!.prompt.limits).toMatchObject({ fundLimitUsd: 10_000, maxLeverage: 2, allowShort: false });
    const cut = await lastExecution(token, runtimeId);
    // 1,000,000 USD asked; the runtime allows 10,000 × 2.
    expect(cut).toMatchObject({ status: 'completed', order: { side: 'buy', status: 'filled' }, decision: { outcome: 'ok', action: 'buy', capped: { limit: 'fund_limit', size: cut.order.size } } });
    expect(cut.riskAssessment.exposureAfterUsd).toBeCloseTo(20_000, 2);
    const runtime = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data;
    expect(runtime).toMatchObject({ status: 'active', book: { trades: 1 } });
    // A sell of twice the position without allowShort: cut to a close.
    const held = runtime.book.positions[0].qty;
    model.reply = () => ({ input: { orders: [{ symbol: 'BTC-USD', side: 'sell', size: held * 2, type: 'market' }], rationale: 'flip short' } });
    await h.nextMinute();
    expect(await lastExecution(token, runtimeId)).toMatchObject({ status: 'completed', order: { side: 'sell', status: 'filled', size: held.toFixed(6) }, decision: { capped: { limit: 'allow_short', size: held.toFixed(6) } } });
    // And from flat a sell places nothing, recorded so.
    await h.nextMinute();
    expect(await lastExecution(token, runtimeId)).toMatchObject({ status: 'completed', order: null, decision: { action: 'hold', symbol: 'BTC-USD', capped: { limit: 'allow_short', size: '0' } } });
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data).toMatchObject({ status: 'active', book: { positions: [] } });
    await pause(token, runtimeId);

    // A strategy with allowShort: a sell from flat opens a short.
    const shorting = await launchAgent('agent-shorting', 'openai', true, { allowShort: true });
    model.reply = () => ({ input: { orders: [{ symbol: 'BTC-USD', side: 'sell', size: 1, type: 'market' }], rationale: 'short' } });
    await h.nextMinute();
    expect(shorting.asked()[0]!.prompt.limits).toMatchObject({ allowShort: true });
    const short = await lastExecution(shorting.token, shorting.runtimeId);
    expect(short).toMatchObject({ status: 'completed', order: { side: 'sell', status: 'filled', size: '1.000000' } });
    expect(short.decision.capped).toBeUndefined();
    await pause(shorting.token, shorting.runtimeId);
  });
});
