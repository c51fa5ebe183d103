// The copier: a signed-in user who wants a priced public strategy's definition (its rules, parameters and
// prompt) without paying for its access, to republish it as their own and run it free. Every route they can
// reach answers the strategy's description and each version's summary, never a definition and never a
// decision's reasons; a backtest, like a runtime, runs only once their account has paid the access (on
// chain, once per account), and a refusal before that payment reads nothing of the definition. The owner
// still reads everything; a free public strategy stays readable to all. docs/trading.md#what-others-see.
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTradingHarness, runtimeBody, type TradingHarness } from './harness.js';

const AUTHOR_PAY_TO = '0x00000000000000000000000000000000000a7702' as Address;
const PRICE = { priceUsd: '0.75', payTo: AUTHOR_PAY_TO };
/** Strings only the definitions hold: none may reach the copier. */
const SECRETS = ['SECRET-EDGE-7d1f', 'edgefast', 'edgeslow', 'SECRET-PROMPT-41c9'];

// A token strategy (its parameters are the whole edge), then rules over named indicators, then a prompt.
const tokens = { kind: 'quant_signal', schemaVersion: 1, definition: { instructions: 'SECRET-EDGE-7d1f fast=3 slow=8 short=true', universe: ['BTC-USD'], dataSources: ['embedded'], candleInterval: '1m' } };
const rules = {
  kind: 'quant_signal',
  schemaVersion: 1,
  definition: {
    instructions: 'SECRET-EDGE-7d1f rules',
    universe: ['BTC-USD', 'ETH-USD'],
    dataSources: ['embedded'],
    candleInterval: '1m',
    rules: {
      indicators: { edgefast: { type: 'ema', period: 3 }, edgeslow: { type: 'ema', period: 8 } },
      entry: { long: [{ left: 'edgefast', op: '>', right: 'edgeslow' }] },
      exit: { long: [{ left: 'edgefast', op: '<', right: 'edgeslow' }] },
      stopLossPercent: 3,
    },
  },
};
const prompt = {
  kind: 'llm_agent',
  schemaVersion: 1,
  definition: { instructions: 'SECRET-PROMPT-41c9: buy the dip', universe: ['BTC-USD'], dataSources: ['embedded'], candleInterval: '5m', model: { provider: 'openai', model: 'gpt-test' }, lookback: 12 },
};

let h: TradingHarness;
beforeAll(async () => {
  // The facilitator role settles the access payments on the devchain; the clock starts at the chain's time.
  h = await openTradingHarness({}, ['api', 'facilitator'], {}, new Date(Math.floor(Date.now() / 60_000) * 60_000 + 30_000).toISOString());
});
afterAll(async () => h?.close());

const balance = (address: string) => h.app.ctx.chain.devchain!.balanceOf(address as Address);

/** A user's trading account with an active agent wallet holding `usdg`. */
async function account(token: string, usdg: string) {
  const created = await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, { name: 'copier' });
  expect(created.status).toBe(201);
  await h.settle();
  const data = (await h.call('GET', '/agentic-trading/accounts', token)).body.data.find((a: { id: string }) => a.id === created.body.data.id);
  expect(data.status).toBe('active');
  if (usdg !== '0') await h.app.ctx.chain.devchain!.fund(data.address as Address, usdg);
  return data as { id: string; address: string };
}

/** The author's priced public strategy with three versions: tokens, rules, a prompt. */
async function pricedStrategy(author: string) {
  const created = await h.call('POST', '/agentic-trading/strategies', author, { name: 'edge', description: 'Trend following on BTC and ETH, long only.', visibility: 'public', access: PRICE, version: tokens });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = created.body.data.id as string;
  for (const version of [rules, prompt]) expect((await h.call('POST', `/agentic-trading/strategies/${id}/versions`, author, version)).status).toBe(201);
  const versions = (await h.call('GET', `/agentic-trading/strategies/${id}`, author)).body.data.versions as Array<{ id: string; contentHash: string }>;
  return { id, v1: versions[0]!, v2: versions[1]!, v3: versions[2]! };
}

const leaks = (answer: unknown) => SECRETS.filter((secret) => JSON.stringify(answer).includes(secret));
const charges = async (token: string, accountId: string) => (await h.call('GET', `/agentic-trading/accounts/${accountId}/charges`, token)).body.data as Array<{ boundary: string; runtimeId: string | null; status: string }>;

/** Past minutes of the clock, as a backtest window of `minutes` ticks. */
const window = (minutes: number) => {
  const to = Math.floor(h.clock.now().getTime() / 60_000) * 60_000 - 60_000;
  return { from: new Date(to - (minutes - 1) * 60_000).toISOString(), to: new Date(to).toISOString(), fundLimitUsd: 10_000, maxLeverage: 2, maxDrawdownPercent: 90 };
};

describe('a signed-in copier and a priced public strategy', () => {
  it('reads its description, price and each version summary, never a definition; the owner reads every definition', async () => {
    const author = await h.app.identityToken('copier-author-1');
    const strategy = await pricedStrategy(author);
    const copier = await h.app.identityToken('copier-1');

    const one = await h.call('GET', `/agentic-trading/strategies/${strategy.id}`, copier);
    expect(one.status).toBe(200);
    expect(one.body.data).toMatchObject({ name: 'edge', description: 'Trend following on BTC and ETH, long only.', visibility: 'public', access: { priceUsd: '0.75', payTo: AUTHOR_PAY_TO.toLowerCase() } });
    expect(one.body.data.versions.map((v: any) => [v.number, v.kind, v.definition, v.contentHash])).toEqual([
      [1, 'quant_signal', null, strategy.v1.contentHash],
      [2, 'quant_signal', null, strategy.v2.contentHash],
      [3, 'llm_agent', null, strategy.v3.contentHash],
    ]);
    expect(one.body.data.versions.map((v: any) => v.summary)).toEqual([
      { universe: ['BTC-USD'], dataSources: ['embedded'], candleInterval: '1m' },
      { universe: ['BTC-USD', 'ETH-USD'], dataSources: ['embedded'], candleInterval: '1m' },
      { universe: ['BTC-USD'], dataSources: ['embedded'], candleInterval: '5m', model: { provider: 'openai', model: 'gpt-test' } },
    ]);
    expect(one.body.data.latestVersion).toMatchObject({ number: 3, definition: null });
    const listed = (await h.call('GET', '/agentic-trading/strategies?limit=500', copier)).body.data.find((s: { id: string }) => s.id === strategy.id);
    expect(listed.latestVersion).toMatchObject({ number: 3, definition: null, summary: { model: { provider: 'openai' } } });
    expect(leaks(one.body)).toEqual([]);
    expect(leaks(listed)).toEqual([]);

    // The owner reads every definition, in the strategy and in the list.
    const own = (await h.call('GET', `/agentic-trading/strategies/${strategy.id}`, author)).body.data;
    expect(own.versions.map((v: any) => v.definition)).toEqual([tokens.definition, expect.objectContaining({ instructions: rules.definition.instructions }), prompt.definition]);
    const ownListed = (await h.call('GET', '/agentic-trading/strategies?limit=500', author)).body.data.find((s: { id: string }) => s.id === strategy.id);
    expect(ownListed.latestVersion.definition).toEqual(prompt.definition);

    // A free public strategy costs nothing to copy: its definition stays readable to everyone.
    const gift = { ...tokens, definition: { ...tokens.definition, instructions: 'A gift. fast=3 slow=8' } };
    const free = (await h.call('POST', '/agentic-trading/strategies', author, { name: 'free', visibility: 'public', version: gift })).body.data;
    expect((await h.call('GET', `/agentic-trading/strategies/${free.id}`, copier)).body.data.latestVersion.definition).toEqual(gift.definition);
  });

  it('cannot take the definition through any route before paying, and a refusal reads nothing of it', async () => {
    const author = await h.app.identityToken('copier-author-2');
    const strategy = await pricedStrategy(author);
    const copier = await h.app.identityToken('copier-2');
    const broke = await account(copier, '0');
    const answers: unknown[] = [];
    const call = async (method: string, path: string, body?: unknown) => {
      const answer = await h.call(method, path, copier, body);
      answers.push(answer);
      return answer;
    };
    const backtest = `/agentic-trading/strategies/${strategy.id}/backtest`;

    expect((await call('GET', '/agentic-trading/strategies')).status).toBe(200);
    expect((await call('GET', `/agentic-trading/strategies/${strategy.id}`)).status).toBe(200);
    // Publishing into it (to read it back) is the owner's alone.
    expect((await call('POST', `/agentic-trading/strategies/${strategy.id}/versions`, tokens)).status).toBe(404);
    // A backtest without consent to the price, or without an account to pay it, is refused before any replay.
    for (const versionId of [strategy.v1.id, strategy.v2.id]) {
      expect(await call('POST', backtest, { ...window(10), versionId })).toMatchObject({ status: 409, body: { data: { reason: 'access_price_not_accepted', accessPriceUsd: '0.75' } } });
    }
    expect(await call('POST', backtest, { ...window(10), maxAccessPriceUsd: '0.75' })).toMatchObject({ status: 400, body: { data: { reason: 'invalid_backtest' } } });
    // Nor does a refusal read the definition first: a window past the work limit tells its owner
    // ticks × symbols × slow (so `slow`, by trying windows), and the copier only the price.
    const universe = Array.from({ length: 20 }, (_, i) => `S${i}-USD`);
    const wideBody = { name: 'wide', visibility: 'public', access: PRICE, version: { ...tokens, definition: { ...tokens.definition, instructions: 'SECRET-EDGE-7d1f fast=50 slow=200', universe } } };
    const wide = (await h.call('POST', '/agentic-trading/strategies', author, wideBody)).body.data;
    const tooMuch = window(2_000);
    const ownRefusal = await h.call('POST', `/agentic-trading/strategies/${wide.id}/backtest`, author, tooMuch);
    expect(ownRefusal).toMatchObject({ status: 400, body: { data: { reason: 'invalid_backtest_window' } } });
    expect(ownRefusal.body.message).toContain('ticks × symbols × slow is 8000000');
    const wideBacktest = `/agentic-trading/strategies/${wide.id}/backtest`;
    expect(await call('POST', wideBacktest, tooMuch)).toMatchObject({ status: 409, body: { data: { reason: 'access_price_not_accepted' } } });
    expect(await call('POST', wideBacktest, { ...tooMuch, accountId: broke.id, maxAccessPriceUsd: '0.75' })).toMatchObject({ status: 409, body: { data: { reason: 'access_payment_refused' } } });
    // With consent but a wallet that cannot pay: refused, nothing replayed, nothing moved.
    const authorBefore = await balance(AUTHOR_PAY_TO);
    expect(await call('POST', backtest, { ...window(10), versionId: strategy.v1.id, accountId: broke.id, maxAccessPriceUsd: '0.75' })).toMatchObject({ status: 409, body: { data: { reason: 'access_payment_refused' } } });
    // A runtime launched on it stays unpaid: it fails at activation and never ticks.
    const launched = await call('POST', '/agentic-trading/runtimes', runtimeBody(strategy.v2.id, broke.id, { maxAccessPriceUsd: '1' }));
    expect(launched.status).toBe(201);
    const runtimeId = (launched as { body: { data: { id: string } } }).body.data.id;
    await h.settle();
    await h.nextMinute();
    expect(await call('GET', `/agentic-trading/runtimes/${runtimeId}`)).toMatchObject({ status: 200, body: { data: { status: 'failed' } } });
    expect(await call('GET', `/agentic-trading/runtimes/${runtimeId}/executions`)).toMatchObject({ status: 200, body: { data: [] } });
    expect(await call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`)).toMatchObject({ status: 409 });
    expect((await call('GET', `/agentic-trading/accounts/${broke.id}/charges`)).status).toBe(200);

    expect(answers.flatMap(leaks)).toEqual([]);
    expect(await balance(AUTHOR_PAY_TO)).toBe(authorBefore);
    expect((await charges(copier, broke.id)).every((c) => c.status === 'failed')).toBe(true);
  });

  it('backtests it only by paying the access once, which its runtimes then share; decisions say what, not why', async () => {
    const author = await h.app.identityToken('copier-author-3');
    const strategy = await pricedStrategy(author);
    const buyer = await h.app.identityToken('copier-3');
    const acct = await account(buyer, '2');
    const authorBefore = await balance(AUTHOR_PAY_TO);
    const backtest = (body: Record<string, unknown>) => h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, buyer, { ...window(120), accountId: acct.id, maxAccessPriceUsd: '0.75', ...body });

    const paid = await backtest({ versionId: strategy.v1.id });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(await balance(AUTHOR_PAY_TO)).toBe(authorBefore + 750_000n);
    expect(await balance(acct.address)).toBe(2_000_000n - 750_000n);
    expect(paid.body.data).toMatchObject({ strategyVersionId: strategy.v1.id, ticks: 120, report: { startEquityUsd: 10_000 } });
    expect(paid.body.data.executions.filter((e: any) => e.order?.status === 'filled').length).toBeGreaterThan(0);
    // What it did (the action, the order), not why: no `params` (fast=3 slow=8 short=true), no signals.
    for (const e of paid.body.data.executions) expect(Object.keys(e.decision).sort()).toEqual(['action', 'kind', 'symbol']);
    const rulesRun = await backtest({ versionId: strategy.v2.id });
    expect(rulesRun.status).toBe(200);
    // A protective level's exit is the book's, not the rules': it shows whole.
    for (const e of rulesRun.body.data.executions) expect(Object.keys(e.decision).sort()).toEqual(e.decision.kind === 'exit' ? ['action', 'kind', 'level', 'price', 'reason', 'symbol'] : ['action', 'kind', 'symbol']);
    expect(leaks(paid.body)).toEqual([]);
    expect(leaks(rulesRun.body)).toEqual([]);

    // Paid once for the account: another backtest and a runtime's activation find it settled.
    const runtime = await h.call('POST', '/agentic-trading/runtimes', buyer, runtimeBody(strategy.v2.id, acct.id, { maxAccessPriceUsd: '0.75' }));
    expect(runtime.status).toBe(201);
    await h.settle();
    const runtimeId = runtime.body.data.id as string;
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, buyer)).body.data.status).toBe('active');
    expect(await balance(AUTHOR_PAY_TO)).toBe(authorBefore + 750_000n);
    expect(await charges(buyer, acct.id)).toEqual([expect.objectContaining({ boundary: 'strategy_access', runtimeId: null, status: 'settled', subject: `strategy:${strategy.id}` })]);

    // The buyer's runtime: its executions, manual run included, say what the rules did and never their
    // conditions or indicator values; the owner's runtime of the same version shows them.
    for (let i = 0; i < 3; i++) await h.nextMinute();
    const manual = await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, buyer);
    expect(manual.status).toBe(201);
    const executions = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions`, buyer)).body.data;
    expect(executions.filter((e: any) => e.leg === 0)).toHaveLength(4); // 4 ticks (a tick has one execution per order)
    for (const e of [...executions, manual.body.data]) expect(Object.keys(e.decision).sort()).toEqual(['action', 'kind', 'symbol']);
    expect(leaks(executions)).toEqual([]);
    expect(leaks(manual.body)).toEqual([]);

    const authorAccount = await account(author, '0');
    const ownRuntime = (await h.call('POST', '/agentic-trading/runtimes', author, runtimeBody(strategy.v2.id, authorAccount.id))).body.data;
    await h.settle();
    await h.nextMinute();
    const [ownExecution] = (await h.call('GET', `/agentic-trading/runtimes/${ownRuntime.id}/executions`, author)).body.data;
    expect(ownExecution.decision).toMatchObject({ kind: 'quant_signal', rules: true, signals: [expect.objectContaining({ values: expect.objectContaining({ edgefast: expect.any(Number) }) }), expect.anything()] });
    // The owner's own backtest is free and shows the parameters.
    const ownBacktest = await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, author, { ...window(5), versionId: strategy.v1.id });
    expect(ownBacktest.body.data.executions[0].decision).toMatchObject({ params: { fast: 3, slow: 8, short: true } });
    expect(await balance(AUTHOR_PAY_TO)).toBe(authorBefore + 750_000n);
  });
});
