// The worker role's own loops, on a hand-moved clock: the reconciler activates a new runtime, the events
// scheduler fires its tick and trading.executions runs it; and a runtime whose status moved without its
// schedule following (a crash between the two) is put right by the reconciler.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../wallets/helpers.js';
import { openTradingHarness, runtimeBody, strategyBody, type TradingHarness } from './harness.js';

let h: TradingHarness;
beforeAll(async () => {
  h = await openTradingHarness({}, ['api', 'worker']);
});
afterAll(async () => h?.close());

describe('the worker role', () => {
  it('activates a runtime and runs its ticks with its own loops', async () => {
    const token = await h.app.identityToken('looper');
    const strategy = (await h.call('POST', '/agentic-trading/strategies', token, strategyBody())).body.data;
    const account = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, {})).body.data;
    const runtimeId = (await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(strategy.latestVersion.id, account.id))).body.data.id;
    const runtime = () => h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token).then((r) => r.body.data);
    await waitFor(async () => (await runtime()).status === 'active');

    const tick = new Date(Math.ceil(h.clock.now().getTime() / 60_000) * 60_000);
    h.clock.set(tick);
    const executions = () => h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions`, token).then((r) => r.body.data);
    const ran = await waitFor(async () => ((await executions()).length > 0 ? executions() : null));
    expect(ran).toMatchObject([{ scheduledAt: tick.toISOString(), triggerType: 'schedule', status: 'completed' }]);
  });

  it('aligns a schedule left behind by a status move (a crash between the two)', async () => {
    const token = await h.app.identityToken('crasher');
    const strategy = (await h.call('POST', '/agentic-trading/strategies', token, strategyBody())).body.data;
    const account = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, {})).body.data;
    const runtimeId = (await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(strategy.latestVersion.id, account.id))).body.data.id;
    await waitFor(async () => (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data.status === 'active');
    // The status moved, the schedule call never happened.
    await h.app.ctx.database.query(sql`update trading_runtimes set status = 'paused' where id = ${runtimeId}`);
    const schedule = async () => {
      const [row] = await h.app.ctx.database.query<{ paused: boolean }>(
        sql`select paused_at is not null as paused from event_schedules where external_id = ${`runtime:${runtimeId}`}`,
      );
      return row?.paused;
    };
    const scheduleState = async () =>
      (await h.app.ctx.database.query<{ schedule_state: string }>(sql`select schedule_state from trading_runtimes where id = ${runtimeId}`))[0]!.schedule_state;
    // The reconciler pauses the schedule, reads the status again, then records the alignment: wait for the last step.
    await waitFor(async () => (await scheduleState()) === 'paused');
    expect(await schedule()).toBe(true);
    expect(await scheduleState()).toBe('paused');
  });
});
