import { sql } from 'drizzle-orm';
import type { Role } from '../../src/platform/server-settings.js';
import { expect } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import type { TradingModuleOptions } from '../../src/modules/trading/module.js';
import { createTradingModule, tradingModule } from '../../src/modules/trading/module.js';
import { moduleFactories } from '../../src/modules/index.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { startBinanceStandIn, type BinanceStandIn } from './binance-stand-in.js';

export const START = '2026-06-01T00:00:30Z';

export interface TradingHarness {
  app: TestApp;
  clock: ManualClock;
  call(method: string, path: string, token: string | null, body?: unknown): Promise<{ status: number; body: any }>;
  /** Moves the clock to the next whole minute and runs the scheduler and the tick consumer there, as the worker would. */
  nextMinute(): Promise<string>;
  /** Runs the reconciler (and the scheduler's registration) until provisioning is done. */
  settle(): Promise<void>;
  executionCount(runtimeId: string): Promise<number>;
  close(): Promise<void>;
}

/** The service on a hand-moved clock; background loops run only with the worker role, else the test drives them. */
/** A harness on the ccxt venue, its exchange the Binance stand-in (BTC-USD as BTC/USDT) on the harness's clock. */
export async function openBinanceHarness(apiKey: string, secret: string): Promise<{ h: TradingHarness; binance: BinanceStandIn }> {
  const binance = await startBinanceStandIn(apiKey, secret);
  const h = await openTradingHarness({}, ['api'], {
    TRADING_VENUE: 'ccxt',
    TRADING_CCXT_EXCHANGE: 'binance',
    TRADING_CCXT_API_KEY: apiKey,
    TRADING_CCXT_SECRET: secret,
    TRADING_CCXT_API_URL: binance.url,
    TRADING_CCXT_SYMBOLS: 'BTC-USD=BTC/USDT',
  });
  binance.now = () => h.clock.now().getTime();
  return { h, binance };
}

export async function openTradingHarness(options: TradingModuleOptions = {}, roles: Role[] = ['api'], env: Record<string, string> = {}, start = START): Promise<TradingHarness> {
  const clock = new ManualClock(start);
  const factories = moduleFactories.map((factory) => (factory === tradingModule ? createTradingModule(options) : factory));
  const app = await buildTestApp({ roles, clock, factories, env });
  const trading = () => app.ctx.services.trading;
  const events = () => app.ctx.services.events;
  return {
    app,
    clock,
    async call(method, path, token, body) {
      const response = await app.origins.api!.inject({
        method: method as 'GET',
        url: path,
        headers: token ? { authorization: `Bearer ${token}` } : {},
        ...(body === undefined ? {} : { payload: body as object }),
      });
      return { status: response.statusCode, body: response.json() };
    },
    async nextMinute() {
      const next = new Date(Math.floor(clock.now().getTime() / 60_000) * 60_000 + 60_000);
      clock.set(next);
      while ((await events().scheduler.tick()).more);
      while ((await trading().consumer.drain()) > 0);
      return next.toISOString();
    },
    async settle() {
      await events().scheduler.tick();
      while (await trading().reconciler.pass());
    },
    async executionCount(runtimeId) {
      const [row] = await app.ctx.database.query<{ n: string }>(sql`select count(*)::text as n from trading_executions where runtime_id = ${runtimeId}`);
      return Number(row!.n);
    },
    close: () => app.close(),
  };
}

export const strategyBody = (instructions = 'Trend follow. fast=2 slow=5', overrides: Record<string, unknown> = {}) => ({
  name: 'trend',
  version: { kind: 'quant_signal', schemaVersion: 1, definition: { instructions, universe: ['BTC-USD'], dataSources: ['embedded'], candleInterval: '1m', ...overrides } },
});

export const runtimeBody = (strategyVersionId: string, accountId: string, overrides: Record<string, unknown> = {}) => ({
  strategyVersionId,
  accountId,
  name: 'btc trend',
  cronExpression: '* * * * *',
  fundLimitUsd: 10_000,
  maxLeverage: 2,
  maxDrawdownPercent: 20,
  idempotencyKey: `key-${Math.random()}`,
  ...overrides,
});

/** A user's strategy (`definition` overriding its definition's fields), account and active runtime. */
export async function launch(h: TradingHarness, sub: string, instructions?: string, runtime: Record<string, unknown> = {}, definition: Record<string, unknown> = {}) {
  const token = await h.app.identityToken(sub);
  const strategy = await h.call('POST', '/agentic-trading/strategies', token, strategyBody(instructions, definition));
  expect(strategy.status).toBe(201);
  const account = await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, { name: 'main' });
  expect(account.status).toBe(201);
  const created = await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(strategy.body.data.latestVersion.id, account.body.data.id, runtime));
  expect(created.status).toBe(201);
  await h.settle();
  const runtimeId = created.body.data.id as string;
  expect((await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data.status).toBe('active');
  return { token, strategy: strategy.body.data, account: account.body.data, runtimeId };
}
