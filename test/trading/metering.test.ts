// Trading's optional x402 metering on the devchain: the account's agent wallet pays, through the wallet
// provider's signature and our facilitator's settle, for strategy access, activation, each tick's market
// data and each execution; each thing once (money read from the chain); a wallet that cannot pay stops
// activation (failed) or trading (needs_review); a lost settle answer is resolved from the chain.
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TickRunner } from '../../src/modules/trading/engine/ticks.js';
import { EmbeddedFeed } from '../../src/modules/trading/data/market-data.js';
import { PaperVenue } from '../../src/modules/trading/venues/venue.js';
import { openTradingHarness, runtimeBody, strategyBody, type TradingHarness } from './harness.js';
import { startModelStandIn, type ModelStandIn } from './model-stand-in.js';

const PRICES = { TRADING_PRICE_ACTIVATION_USD: '0.5', TRADING_PRICE_EXECUTION_USD: '0.01', TRADING_PRICE_MARKET_DATA_USD: '0.002' };
const PAY_TO = '0x00000000000000000000000000000000000fee01' as Address;
const AUTHOR = '0x00000000000000000000000000000000000a7701' as Address;

const MODEL_KEY = 'sk-metered-model-key';
let h: TradingHarness;
let model: ModelStandIn;
beforeAll(async () => {
  model = await startModelStandIn({ openai: MODEL_KEY, anthropic: MODEL_KEY, openrouter: MODEL_KEY });
  // The facilitator role settles the payments (its origin is what ctx.x402 calls).
  h = await openTradingHarness({}, ['api', 'facilitator'], { ...PRICES, TRADING_METERING_PAY_TO: PAY_TO, ...model.env() }, new Date(Math.floor(Date.now() / 60_000) * 60_000 + 30_000).toISOString());
});
afterAll(async () => {
  await h?.close();
  await model?.close();
});

const balance = (address: string) => h.app.ctx.chain.devchain!.balanceOf(address as Address);
const fund = (address: string, usdg: string) => h.app.ctx.chain.devchain!.fund(address as Address, usdg);

async function account(token: string, usdg: string) {
  const created = await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, { name: 'metered' });
  expect(created.status).toBe(201);
  await h.settle(); // the wallet provisions
  const data = (await h.call('GET', '/agentic-trading/accounts', token)).body.data.find((a: { id: string }) => a.id === created.body.data.id);
  expect(data.status).toBe('active');
  if (usdg !== '0') await fund(data.address, usdg);
  return data as { id: string; address: string };
}

async function strategy(token: string, body: Record<string, unknown> = {}) {
  const created = await h.call('POST', '/agentic-trading/strategies', token, { ...strategyBody(), ...body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data as { id: string; latestVersion: { id: string }; access: unknown };
}

async function runtime(token: string, versionId: string, accountId: string, overrides: Record<string, unknown> = {}) {
  const created = await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(versionId, accountId, overrides));
  expect(created.status).toBe(201);
  await h.settle();
  return (await h.call('GET', `/agentic-trading/runtimes/${created.body.data.id}`, token)).body.data as { id: string; status: string; statusReason: string | null };
}

const charges = async (token: string, accountId: string) => (await h.call('GET', `/agentic-trading/accounts/${accountId}/charges`, token)).body.data as any[];

describe('metered trading (x402, paid by the agent wallet)', () => {
  it("an llm_agent's tick pays its market data and its execution from the wallet, then asks the model", async () => {
    const token = await h.app.identityToken('metered-agent');
    const definition = { instructions: 'Hold unless sure.', universe: ['BTC-USD'], dataSources: ['embedded'], candleInterval: '1m', model: { provider: 'openai', model: 'metered-1' }, lookback: 10 };
    const { latestVersion } = await strategy(token, { version: { kind: 'llm_agent', schemaVersion: 1, definition } });
    const acct = await account(token, '2');
    expect((await h.call('PUT', `/agentic-trading/accounts/${acct.id}/providers`, token, { provider: 'openai', apiKey: MODEL_KEY })).status).toBe(200);
    const rt = await runtime(token, latestVersion.id, acct.id);
    const asked = model.asked.length;
    await h.nextMinute();
    expect(model.asked.length - asked).toBe(1);
    const [execution] = (await h.call('GET', `/agentic-trading/runtimes/${rt.id}/executions`, token)).body.data;
    expect(execution).toMatchObject({ status: 'completed', decision: { kind: 'llm_agent', outcome: 'ok' } });
    const paid = (await charges(token, acct.id)).filter((c) => c.subject.startsWith('tick:'));
    expect(paid.map((c) => c.boundary).sort()).toEqual(['execution', 'market_data']);
    for (const charge of paid) expect(charge).toMatchObject({ status: 'settled', runtimeId: rt.id });
    expect(await balance(acct.address)).toBe(1_500_000n - 12_000n);
    expect((await h.call('PATCH', `/agentic-trading/runtimes/${rt.id}/status`, token, { status: 'paused' })).status).toBe(200);
  });

  it('charges activation once, then market data and execution once per tick, moving USDG on chain', async () => {
    const token = await h.app.identityToken('metered-trader');
    const { latestVersion } = await strategy(token);
    const acct = await account(token, '2');
    const payToBefore = await balance(PAY_TO);

    const rt = await runtime(token, latestVersion.id, acct.id);
    expect(rt.status).toBe('active');
    expect(await balance(acct.address)).toBe(1_500_000n);
    await h.settle(); // another pass pays nothing more
    expect(await balance(acct.address)).toBe(1_500_000n);

    await h.nextMinute();
    await h.nextMinute();
    expect(await h.executionCount(rt.id)).toBe(2);
    expect(await balance(acct.address)).toBe(1_500_000n - 2n * 12_000n);
    expect(await balance(PAY_TO)).toBe(payToBefore + 500_000n + 2n * 12_000n);

    const list = await charges(token, acct.id);
    expect(list.map((c) => c.boundary).sort()).toEqual(['activation', 'execution', 'execution', 'market_data', 'market_data']);
    for (const charge of list) {
      expect(charge).toMatchObject({ status: 'settled', payer: acct.address.toLowerCase(), payTo: PAY_TO.toLowerCase(), runtimeId: rt.id });
      expect(charge.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    }
    expect(new Set(list.map((c) => c.transaction)).size).toBe(5);

    // The same tick run again (a redelivery, another worker): it is done, and nothing is charged.
    const ctx = h.app.ctx;
    const again = new TickRunner(ctx, ctx.services.trading.catalog.store, { feedFor: () => new EmbeddedFeed(), venue: new PaperVenue(), meter: ctx.services.trading.meter, agents: ctx.services.trading.agents });
    const [execution] = (await h.call('GET', `/agentic-trading/runtimes/${rt.id}/executions`, token)).body.data;
    expect(await again.run(rt.id, 'schedule', new Date(execution.scheduledAt), 2)).toMatchObject({ ran: false, reason: 'done' });
    expect(await balance(acct.address)).toBe(1_500_000n - 24_000n);

    // Another user cannot read this account's charges.
    const other = await h.app.identityToken('metered-stranger');
    expect((await h.call('GET', `/agentic-trading/accounts/${acct.id}/charges`, other)).status).toBe(404);
  });

  it('charges a tick raced by five workers once', async () => {
    const token = await h.app.identityToken('metered-race');
    const { latestVersion } = await strategy(token);
    const acct = await account(token, '1');
    const rt = await runtime(token, latestVersion.id, acct.id);
    const ctx = h.app.ctx;
    const workers = Array.from({ length: 5 }, () => new TickRunner(ctx, ctx.services.trading.catalog.store, { feedFor: () => new EmbeddedFeed(), venue: new PaperVenue(), meter: ctx.services.trading.meter, agents: ctx.services.trading.agents }));
    const at = new Date(Math.floor(h.clock.now().getTime() / 60_000) * 60_000);
    const results = await Promise.allSettled(workers.map((worker) => worker.run(rt.id, 'schedule', at, 1)));
    expect(results.filter((r) => r.status === 'fulfilled' && r.value.ran)).toHaveLength(1);
    // Losers either found the tick done or its charge still settling (a failure their event retries).
    for (const worker of workers) await worker.run(rt.id, 'schedule', at, 2).catch(() => undefined);
    expect(await h.executionCount(rt.id)).toBe(1);
    expect((await charges(token, acct.id)).map((c) => c.boundary).sort()).toEqual(['activation', 'execution', 'market_data']);
    expect(await balance(acct.address)).toBe(1_000_000n - 500_000n - 12_000n);
  });

  it('fails a runtime whose wallet cannot pay its activation, moving nothing', async () => {
    const token = await h.app.identityToken('metered-broke');
    const { latestVersion } = await strategy(token);
    const acct = await account(token, '0');
    const rt = await runtime(token, latestVersion.id, acct.id);
    expect(rt.status).toBe('failed');
    expect(rt.statusReason).toMatch(/^activation payment refused: /);
    const [charge] = await charges(token, acct.id);
    expect(charge).toMatchObject({ boundary: 'activation', status: 'failed', transaction: null });
  });

  it('sends a runtime to review when its wallet runs dry, with a failed execution and no order', async () => {
    const token = await h.app.identityToken('metered-dry');
    const { latestVersion } = await strategy(token);
    const acct = await account(token, '0.512'); // activation and exactly one tick
    const rt = await runtime(token, latestVersion.id, acct.id);
    await h.nextMinute();
    await h.nextMinute();
    const after = (await h.call('GET', `/agentic-trading/runtimes/${rt.id}`, token)).body.data;
    expect(after).toMatchObject({ status: 'needs_review' });
    expect(after.statusReason).toMatch(/^tick payment refused: /);
    const executions = (await h.call('GET', `/agentic-trading/runtimes/${rt.id}/executions`, token)).body.data;
    expect(executions.map((e: { status: string }) => e.status)).toEqual(['failed', 'completed']);
    expect(executions[0]).toMatchObject({ order: null, decision: null, error: { code: 'payment_refused' } });
    expect(await balance(acct.address)).toBe(0n);
    // In review, the schedule is paused: the next minute runs nothing and charges nothing.
    await h.nextMinute();
    expect(await h.executionCount(rt.id)).toBe(2);
  });

  it("charges another owner's strategy access once per account, to the author; the author's own runtimes pay no access", async () => {
    const author = await h.app.identityToken('metered-author');
    const priced = await strategy(author, { visibility: 'public', access: { priceUsd: '1.25', payTo: AUTHOR } });
    expect(priced.access).toEqual({ priceUsd: '1.25', payTo: AUTHOR.toLowerCase() });
    const authorBefore = await balance(AUTHOR);

    const buyer = await h.app.identityToken('metered-buyer');
    const acct = await account(buyer, '5');
    // The price is charged only with the buyer's consent to it: none, or a lower ceiling, is refused and charges nothing.
    for (const consent of [{}, { maxAccessPriceUsd: '1.249999' }]) {
      const refused = await h.call('POST', '/agentic-trading/runtimes', buyer, runtimeBody(priced.latestVersion.id, acct.id, consent));
      expect(refused).toMatchObject({ status: 409, body: { data: { reason: 'access_price_not_accepted', accessPriceUsd: '1.25' } } });
    }
    expect(await charges(buyer, acct.id)).toEqual([]);
    expect((await runtime(buyer, priced.latestVersion.id, acct.id, { maxAccessPriceUsd: '1.25' })).status).toBe('active');
    expect((await runtime(buyer, priced.latestVersion.id, acct.id, { maxAccessPriceUsd: '2' })).status).toBe('active');
    expect(await balance(AUTHOR)).toBe(authorBefore + 1_250_000n);
    expect(await balance(acct.address)).toBe(5_000_000n - 1_250_000n - 2n * 500_000n);
    expect((await charges(buyer, acct.id)).map((c) => c.boundary).sort()).toEqual(['activation', 'activation', 'strategy_access']);

    const own = await account(author, '1');
    expect((await runtime(author, priced.latestVersion.id, own.id)).status).toBe('active');
    expect((await charges(author, own.id)).map((c) => c.boundary)).toEqual(['activation']);
    expect(await balance(AUTHOR)).toBe(authorBefore + 1_250_000n);
  });

  it('refuses a bad access price or payee with 400', async () => {
    const token = await h.app.identityToken('metered-author');
    for (const access of [{ priceUsd: '0', payTo: AUTHOR }, { priceUsd: '1.1234567', payTo: AUTHOR }, { priceUsd: '1', payTo: '0x12' }, { priceUsd: '-1', payTo: AUTHOR }]) {
      expect((await h.call('POST', '/agentic-trading/strategies', token, { ...strategyBody(), access })).status).toBe(400);
    }
  });

  it('resolves a settle whose answer was lost from the chain: paid once, then active', async () => {
    const token = await h.app.identityToken('metered-lost');
    const { latestVersion } = await strategy(token);
    const acct = await account(token, '1');
    const x402 = h.app.ctx.x402;
    const settle = x402.settle.bind(x402);
    // The facilitator settles, and its answer never arrives.
    x402.settle = async (...args) => {
      await settle(...args);
      throw new Error('socket hang up');
    };
    let rt;
    try {
      rt = await runtime(token, latestVersion.id, acct.id);
    } finally {
      x402.settle = settle;
    }
    expect(rt.status).toBe('provisioning');
    expect(await balance(acct.address)).toBe(500_000n);
    await h.settle(); // the charge is settling: no second payment
    expect((await charges(token, acct.id))[0]).toMatchObject({ status: 'settling' });

    h.clock.advance(61_000);
    expect(await h.app.ctx.services.trading.charges.sweep()).toEqual({ checked: 1, resolved: 1 });
    await h.settle();
    expect((await h.call('GET', `/agentic-trading/runtimes/${rt.id}`, token)).body.data.status).toBe('active');
    expect(await balance(acct.address)).toBe(500_000n);
    expect((await charges(token, acct.id))[0]).toMatchObject({ status: 'settled', transaction: expect.stringMatching(/^0x/) });
  });
});
