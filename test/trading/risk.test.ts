// Risk limits and the kill switch, through scheduled ticks: an order past a sizing limit is cut to it (recorded)
// and the runtime runs on; a drawdown breach blocks an order that adds exposure and hands the runtime to review
// (its schedule paused), never one that closes; halt places nothing; reduce_only only shrinks positions; the
// owner's flatten closes everything; a stale tick is skipped, not placed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, openTradingHarness, runtimeBody, type TradingHarness } from './harness.js';

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
  it('cuts an order past fundLimitUsd × maxLeverage to it, records the cut, and the runtime keeps running', async () => {
    // exposure=3 asks for 3× equity; the runtime allows 2× (20,000 of 10,000).
    const { token, runtimeId } = await launch(h, 'risky', 'fast=2 slow=5 exposure=3', { maxLeverage: 2 });
    const cut = await untilOrder(token, runtimeId);
    expect(cut).toMatchObject({ status: 'completed', order: { status: 'filled' }, riskAssessment: { outcome: 'approved', breaches: [] } });
    expect(cut.decision.capped).toMatchObject({ size: cut.order.size, limit: 'fund_limit' });
    // Asked 30,000 USD at the price it was decided at, given 20,000.
    expect(Number(cut.decision.capped.requestedSize) / Number(cut.order.size)).toBeCloseTo(1.5, 3);
    expect(cut.riskAssessment.exposureAfterUsd).toBeCloseTo(20_000, 2);
    expect(cut.riskAssessment.leverageAfter).toBeCloseTo(2, 6);
    expect(await runtimeOf(token, runtimeId)).toMatchObject({ status: 'active', statusReason: null, book: { trades: 1 } });
    const count = await h.executionCount(runtimeId);
    for (let i = 0; i < 3; i++) await h.nextMinute();
    expect(await h.executionCount(runtimeId)).toBeGreaterThanOrEqual(count + 3);
    expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'paused' })).status).toBe(200);
  });

  it('a position is never trapped: under a drawdown breach the close still executes, and the next order that adds exposure is blocked', async () => {
    // A tiny drawdown limit: the opening buy's fee and slippage breach it at once.
    const { token, runtimeId } = await launch(h, 'trapped', 'fast=2 slow=5', { maxDrawdownPercent: 0.0001 });
    const opened = await untilOrder(token, runtimeId);
    expect(opened).toMatchObject({ status: 'completed', order: { side: 'buy', status: 'filled' } });
    let close;
    for (let i = 0; i < 120 && !close; i++) {
      await h.nextMinute();
      const last = (await executionsOf(token, runtimeId)).at(-1);
      // Holding, breached or not: recorded, not blocked; the runtime keeps running.
      if (!last.order) expect(last).toMatchObject({ status: 'completed', riskAssessment: { outcome: 'no_order' } });
      else close = last;
    }
    expect(close).toMatchObject({ status: 'completed', order: { side: 'sell', status: 'filled' }, riskAssessment: { breaches: ['drawdown'], outcome: 'approved_reducing' } });
    expect((await runtimeOf(token, runtimeId)).book.positions).toEqual([]);
    const reopen = await untilOrder(token, runtimeId);
    expect(reopen).toMatchObject({ status: 'blocked', order: { side: 'buy', status: 'blocked' } });
    expect((await runtimeOf(token, runtimeId)).status).toBe('needs_review');
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

describe("the owner's flatten", () => {
  const flatten = (token: string, runtimeId: string) => h.call('POST', `/agentic-trading/runtimes/${runtimeId}/flatten`, token, {});

  it('closes every position of a paused runtime, moves no status, and is not charged; a flat book places nothing', async () => {
    const { token, runtimeId, account } = await launch(h, 'flattener', 'fast=2 slow=5');
    await untilOrder(token, runtimeId);
    const held = (await runtimeOf(token, runtimeId)).book.positions;
    expect(held).toHaveLength(1);
    expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'paused' })).status).toBe(200);
    const flat = await flatten(token, runtimeId);
    expect(flat.status).toBe(200);
    expect(flat.body.data.executions).toHaveLength(1);
    expect(flat.body.data.executions[0]).toMatchObject({
      triggerType: 'flatten',
      status: 'completed',
      decision: { kind: 'flatten', symbol: 'BTC-USD' },
      order: { side: held[0].qty > 0 ? 'sell' : 'buy', size: Math.abs(held[0].qty).toFixed(6), status: 'filled' },
    });
    expect(flat.body.data.runtime).toMatchObject({ status: 'paused', book: { positions: [] } });
    const again = await flatten(token, runtimeId);
    expect(again.body.data.executions).toEqual([]);
    expect((await h.call('GET', `/agentic-trading/accounts/${account.id}/charges`, token)).body.data).toEqual([]);
    // Another user's runtime is not there; a stopped one cannot be flattened.
    expect((await flatten(await h.app.identityToken('mallory'), runtimeId)).status).toBe(404);
    expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'stopped' })).status).toBe(200);
    expect(await flatten(token, runtimeId)).toMatchObject({ status: 409, body: { data: { reason: 'runtime_not_flattenable', status: 'stopped' } } });
  });

  it("the kill switch halt stops new risk, never the owner's flatten: the position closes under halt", async () => {
    const { token, runtimeId, account } = await launch(h, 'halted-flattener', 'fast=2 slow=5');
    await untilOrder(token, runtimeId);
    await h.call('PUT', `/agentic-trading/accounts/${account.id}/kill-switch`, token, { mode: 'halt' });
    // It used to be recorded halted, the position left open under the switch meant to stop risk.
    const closed = await flatten(token, runtimeId);
    expect(closed.body.data.executions).toMatchObject([{ triggerType: 'flatten', status: 'completed', order: { status: 'filled' }, riskAssessment: { killSwitch: 'halt', outcome: 'approved' } }]);
    expect(closed.body.data.runtime).toMatchObject({ status: 'active', book: { positions: [] } });
    // And the strategy's next entry is still halted.
    const halted = await untilOrder(token, runtimeId);
    expect(halted).toMatchObject({ status: 'halted', order: { side: expect.any(String), status: 'blocked' }, riskAssessment: { killSwitch: 'halt', outcome: 'halted' } });
  });
});

describe('stale ticks', () => {
  it('a tick consumed after its next one was due is recorded skipped, never placed at its old price', async () => {
    const { token, runtimeId } = await launch(h, 'late', 'fast=2 slow=5 short=true');
    const minute = new Date(Math.floor(h.clock.now().getTime() / 60_000) * 60_000 + 60_000);
    h.clock.set(minute);
    await h.app.ctx.services.events.scheduler.tick(); // the tick fires…
    h.clock.set(new Date(minute.getTime() + 60_000 + 5_000)); // …and a worker gets to it 65 s later
    while ((await h.app.ctx.services.trading.consumer.drain()) > 0);
    const [late] = await executionsOf(token, runtimeId);
    expect(late).toMatchObject({ scheduledAt: minute.toISOString(), status: 'skipped', order: null, decision: null, error: { code: 'stale_tick' } });
    expect((await runtimeOf(token, runtimeId)).book).toMatchObject({ trades: 0, positions: [] });
    // The next tick, on time, runs (short=true: an empty book trades at once).
    await h.nextMinute();
    expect((await executionsOf(token, runtimeId)).at(-1)).toMatchObject({ status: 'completed', order: { status: 'filled' } });
  });
});

describe('the account-wide limit', () => {
  it("cuts an order to what the account's limit leaves its runtimes together; paused runtimes' positions count", async () => {
    const { token, runtimeId, account, strategy } = await launch(h, 'account-limited', 'fast=2 slow=5');
    const limited = await h.call('PUT', `/agentic-trading/accounts/${account.id}/limits`, token, { maxExposureUsd: 15_000 });
    expect(limited).toMatchObject({ status: 200, body: { data: { id: account.id, maxExposureUsd: 15_000 } } });
    expect((await h.call('PUT', `/agentic-trading/accounts/${account.id}/limits`, await h.app.identityToken('mallory'), { maxExposureUsd: 1 })).status).toBe(404);
    // The first runtime takes ~10,000 USD of exposure (exposure=1 of its 10,000 equity), then pauses.
    expect(await untilOrder(token, runtimeId)).toMatchObject({ status: 'completed', order: { side: 'buy', status: 'filled' } });
    expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'paused' })).status).toBe(200);
    // A second runtime of the account wants as much again: 20,000 > 15,000, so it gets what is left.
    const second = (await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(strategy.latestVersion.id, account.id))).body.data;
    await h.settle();
    const cut = await untilOrder(token, second.id);
    expect(cut).toMatchObject({ status: 'completed', order: { status: 'filled' }, decision: { capped: { limit: 'account_limit' } }, riskAssessment: { breaches: [] } });
    const check = cut.riskAssessment.checks.find((c: { name: string }) => c.name === 'account_limit');
    expect(check).toMatchObject({ limit: 15_000, ok: true });
    expect(check.value).toBeCloseTo(15_000, 0);
    expect(cut.order.notionalUsd).toBeLessThan(6_000);
    expect(await runtimeOf(token, second.id)).toMatchObject({ status: 'active' });
  });
});

describe('provisioning', () => {
  it('a runtime whose schedule is never registered fails after the provisioning timeout, saying why', async () => {
    const { token, account, strategy } = await launch(h, 'never-scheduled', 'fast=2 slow=5');
    const created = (await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(strategy.latestVersion.id, account.id))).body.data;
    const reconciler = h.app.ctx.services.trading.reconciler;
    while (await reconciler.pass()); // makes the schedule; the events scheduler never registers it here
    expect(await runtimeOf(token, created.id)).toMatchObject({ status: 'provisioning' });
    h.clock.advance(599_000);
    while (await reconciler.pass());
    expect(await runtimeOf(token, created.id)).toMatchObject({ status: 'provisioning' });
    h.clock.advance(2_000);
    while (await reconciler.pass());
    expect(await runtimeOf(token, created.id)).toMatchObject({ status: 'failed', statusReason: 'provisioning timed out after 601 s: its schedule was never registered' });
  });
});
