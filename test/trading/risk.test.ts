// Risk limits and the kill switch, through scheduled ticks: a breach blocks the order and hands the
// runtime to review (its schedule paused); halt places nothing; reduce_only only shrinks positions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, openTradingHarness, type TradingHarness } from './harness.js';

let h: TradingHarness;
beforeAll(async () => {
  h = await openTradingHarness();
});
afterAll(async () => h?.close());

const executionsOf = async (token: string, runtimeId: string) => (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions?limit=100`, token)).body.data.reverse();
const runtimeOf = async (token: string, runtimeId: string) => (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data;

/** Ticks until the runtime has an execution with an order (the signal turned). */
async function untilOrder(token: string, runtimeId: string, limit = 60) {
  for (let i = 0; i < limit; i++) {
    await h.nextMinute();
    const last = (await executionsOf(token, runtimeId)).at(-1);
    if (last?.order) return last;
  }
  throw new Error('no order within the window');
}

describe('risk limits', () => {
  it('blocks an order over the leverage limit, moves the runtime to needs_review and stops its ticks', async () => {
    // exposure=3 asks for 3× equity; the runtime allows 2×.
    const { token, runtimeId } = await launch(h, 'risky', 'fast=2 slow=5 exposure=3', { maxLeverage: 2 });
    const blocked = await untilOrder(token, runtimeId);
    expect(blocked).toMatchObject({ status: 'blocked', order: { side: 'buy', status: 'blocked', price: null } });
    expect(blocked.riskAssessment.breaches).toEqual(expect.arrayContaining(['leverage', 'fund_limit']));
    expect(blocked.riskAssessment.leverageAfter).toBeGreaterThan(2);
    const runtime = await runtimeOf(token, runtimeId);
    expect(runtime).toMatchObject({ status: 'needs_review', statusReason: expect.stringContaining('leverage') });
    expect(runtime.book).toMatchObject({ trades: 0, positions: [], cashUsd: 10_000 });

    const count = await h.executionCount(runtimeId);
    for (let i = 0; i < 3; i++) await h.nextMinute();
    expect(await h.executionCount(runtimeId)).toBe(count);
    // The owner acknowledges by pausing; then it can resume or stop.
    expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'active' })).status).toBe(409);
    expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'paused' })).status).toBe(200);
  });

  it('blocks every order once the drawdown from the peak reaches the limit', async () => {
    // A tiny drawdown limit: the first round trip's fees and slippage breach it.
    const { token, runtimeId } = await launch(h, 'timid', 'fast=2 slow=5', { maxDrawdownPercent: 0.0001 });
    let last;
    for (let i = 0; i < 120 && (await runtimeOf(token, runtimeId)).status === 'active'; i++) {
      await h.nextMinute();
      last = (await executionsOf(token, runtimeId)).at(-1);
    }
    expect(last).toMatchObject({ status: 'blocked' });
    expect(last.riskAssessment.breaches).toContain('drawdown');
    expect(last.riskAssessment.drawdownPercent).toBeGreaterThanOrEqual(0.0001);
    expect((await runtimeOf(token, runtimeId)).status).toBe('needs_review');
  });
});

describe('the kill switch', () => {
  it('halt: ticks still run and are recorded, but nothing is placed', async () => {
    const { token, runtimeId, account } = await launch(h, 'halter', 'fast=2 slow=5');
    const set = await h.call('PUT', `/agentic-trading/accounts/${account.id}/kill-switch`, token, { mode: 'halt' });
    expect(set.body.data).toMatchObject({ id: account.id, killSwitch: 'halt' });
    const halted = await untilOrder(token, runtimeId);
    expect(halted).toMatchObject({ status: 'halted', order: { status: 'blocked' }, riskAssessment: { killSwitch: 'halt', outcome: 'halted' } });
    const runtime = await runtimeOf(token, runtimeId);
    expect(runtime).toMatchObject({ status: 'active', book: { trades: 0 } });
    const mallory = await h.app.identityToken('mallory');
    expect((await h.call('PUT', `/agentic-trading/accounts/${account.id}/kill-switch`, mallory, { mode: 'off' })).status).toBe(404);
  });

  it('reduce_only: a position may shrink, never grow', async () => {
    const { token, runtimeId, account } = await launch(h, 'reducer', 'fast=2 slow=5');
    const opened = await untilOrder(token, runtimeId);
    expect(opened).toMatchObject({ status: 'completed', order: { side: 'buy', status: 'filled' } });
    await h.call('PUT', `/agentic-trading/accounts/${account.id}/kill-switch`, token, { mode: 'reduce_only' });
    // From here on: every buy is halted, every sell fills.
    let sells = 0;
    for (let i = 0; i < 90 && sells === 0; i++) {
      await h.nextMinute();
      const last = (await executionsOf(token, runtimeId)).at(-1);
      if (!last.order) continue;
      if (last.order.side === 'buy') expect(last).toMatchObject({ status: 'halted', order: { status: 'blocked' } });
      else {
        expect(last).toMatchObject({ status: 'completed', order: { status: 'filled' } });
        sells += 1;
      }
    }
    expect(sells).toBe(1);
    expect((await runtimeOf(token, runtimeId)).book.positions).toEqual([]);
  });
});
