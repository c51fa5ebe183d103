// A runtime on `* * * * *` with a hand-moved clock, over HTTP: one execution per tick, pause, resume and
// stop (terminal), a later version that does not change it, idempotent creation, tenants apart.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, openTradingHarness, runtimeBody, strategyBody, type TradingHarness } from './harness.js';

let h: TradingHarness;
beforeAll(async () => {
  h = await openTradingHarness();
});
afterAll(async () => h?.close());

describe('a runtime on a per-minute cron', () => {
  it('runs exactly one execution per tick, linked to the version it was launched with', async () => {
    const { token, strategy, runtimeId } = await launch(h, 'alice');
    const v1 = strategy.latestVersion;
    expect(v1.contentHash).toMatch(/^sha256:[0-9a-f]{64}$/);

    const ticks = [];
    for (let i = 0; i < 5; i++) ticks.push(await h.nextMinute());
    // A version published now changes nothing for the running runtime.
    const published = await h.call('POST', `/agentic-trading/strategies/${strategy.id}/versions`, token, strategyBody('fast=3 slow=8').version);
    expect(published.status).toBe(201);
    expect(published.body.data.latestVersion).toMatchObject({ number: 2, strategyId: strategy.id });
    expect(published.body.data.latestVersion.contentHash).not.toBe(v1.contentHash);
    for (let i = 0; i < 3; i++) ticks.push(await h.nextMinute());

    const executions = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions?limit=100`, token)).body.data;
    expect(executions.map((e: any) => e.scheduledAt)).toEqual([...ticks].reverse().map((t) => new Date(t).toISOString()));
    for (const execution of executions) {
      expect(execution).toMatchObject({ runtimeId, triggerType: 'schedule', status: 'completed', attemptCount: 1, strategyVersionHash: v1.contentHash, error: null });
      expect(execution.inputsDigest).toMatch(/^sha256:/);
      expect(execution.decision).toMatchObject({ kind: 'quant_signal', params: { fast: 2, slow: 5 } });
      expect(execution.riskAssessment).toMatchObject({ fundLimitUsd: 10_000, maxLeverage: 2, maxDrawdownPercent: 20, breaches: [] });
    }
    const runtime = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data;
    expect(runtime).toMatchObject({ strategyVersionId: v1.id, strategyVersionHash: v1.contentHash, status: 'active' });
    // The book follows the fills.
    const fills = executions.filter((e: any) => e.order?.status === 'filled');
    expect(fills.length).toBeGreaterThan(0);
    expect(runtime.book.trades).toBe(fills.length);

    // Running a tick's event again (a redelivery) adds nothing.
    const again = await h.app.ctx.services.trading.runner.run(runtimeId, 'schedule', new Date(ticks[0]!), 2);
    expect(again).toMatchObject({ ran: false, reason: 'done' });
    expect(await h.executionCount(runtimeId)).toBe(8);
    // Metering is off by default: the unfunded agent wallet paid nothing, and nothing was charged.
    const account = (await h.call('GET', '/agentic-trading/accounts', token)).body.data[0];
    expect((await h.call('GET', `/agentic-trading/accounts/${account.id}/charges`, token)).body.data).toEqual([]);
  });

  it('pauses (no ticks), resumes, refuses to stop an active runtime, stops a paused one for good', async () => {
    const { token, runtimeId } = await launch(h, 'bob');
    const status = (to: string) => h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: to });
    await h.nextMinute();
    expect(await h.executionCount(runtimeId)).toBe(1);

    expect((await status('paused')).body.data.status).toBe('paused');
    expect((await status('paused')).status).toBe(200); // asking again changes nothing
    for (let i = 0; i < 3; i++) await h.nextMinute();
    expect(await h.executionCount(runtimeId)).toBe(1);
    const manualWhilePaused = await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, token);
    expect(manualWhilePaused).toMatchObject({ status: 409, body: { data: { reason: 'runtime_not_active', status: 'paused' } } });

    expect((await status('active')).body.data.status).toBe('active');
    await h.settle(); // the scheduler registers the resumed schedule
    await h.nextMinute();
    await h.nextMinute();
    expect(await h.executionCount(runtimeId)).toBe(3);

    const stopActive = await status('stopped');
    expect(stopActive).toMatchObject({ status: 409, body: { data: { reason: 'invalid_status_transition', status: 'active', requested: 'stopped' } } });
    expect((await status('paused')).status).toBe(200);
    expect((await status('stopped')).body.data.status).toBe('stopped');
    for (const to of ['active', 'paused']) expect((await status(to)).status).toBe(409);
    await h.nextMinute();
    expect(await h.executionCount(runtimeId)).toBe(3);
    // Its schedule is gone.
    const schedules = await h.app.ctx.services.events.schedules.list('system:agentic-trading', null);
    expect(schedules.some((s) => (s.payload as any).runtimeId === runtimeId)).toBe(false);
  });

  it('a pause aligned after a racing resume leaves the schedule running, as the runtime is', async () => {
    const { runtimeId } = await launch(h, 'racing-mover');
    const { reconciler } = h.app.ctx.services.trading;
    const runtime = (await h.app.ctx.services.trading.runtimes.store.get(runtimeId))!;
    // A pause's aligner that reaches the schedule only after a resume was written and aligned.
    await reconciler.align({ id: runtimeId, status: 'paused', scheduleId: runtime.scheduleId });
    const [row] = await h.app.ctx.database.query<{ paused: boolean; state: string }>(
      sql`select s.paused_at is not null as paused, r.schedule_state as state from trading_runtimes r join event_schedules s on s.id = r.schedule_id where r.id = ${runtimeId}`,
    );
    expect(row).toEqual({ paused: false, state: 'active' });
    await h.settle(); // the scheduler registers the resumed schedule
    await h.nextMinute();
    expect(await h.executionCount(runtimeId)).toBe(1);
  });

  it('runs now on request (manual trigger) on the same path', async () => {
    const { token, runtimeId } = await launch(h, 'carol');
    h.clock.advance(7_000);
    const manual = await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, token);
    expect(manual.status).toBe(201);
    expect(manual.body.data).toMatchObject({ runtimeId, triggerType: 'manual', scheduledAt: h.clock.now().toISOString(), status: 'completed', attemptCount: 1 });
    // Asked again at the same instant (the clock has not moved): the same tick, so the same execution.
    const again = await Promise.all([1, 2].map(() => h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, token)));
    for (const answer of again) expect(answer).toMatchObject({ status: 201, body: { data: { id: manual.body.data.id } } });
    expect(await h.executionCount(runtimeId)).toBe(1);
  });

  it('pages strategies, accounts and runtimes newest first by cursor, so a flood of public strategies hides no private one', async () => {
    const { token, runtimeId, strategy, account } = await launch(h, 'pager');
    const flooder = await h.app.identityToken('flooder');
    for (let i = 0; i < 3; i++) expect((await h.call('POST', '/agentic-trading/strategies', flooder, { ...strategyBody(), visibility: 'public' })).status).toBe(201);
    const ids: string[] = [];
    for (let before: string | undefined, n = 0; n < 20; n++) {
      const page = (await h.call('GET', `/agentic-trading/strategies?limit=2${before ? `&before=${before}` : ''}`, token)).body.data as any[];
      expect(page.length).toBeLessThanOrEqual(2);
      ids.push(...page.map((s) => s.id));
      if (page.length < 2) break;
      before = page.at(-1).id;
    }
    expect(ids).toEqual([...ids].sort().reverse());
    expect(ids).toContain(strategy.id);
    expect(new Set(ids).size).toBe(ids.length);
    h.clock.advance(1_000); // ids are time-ordered: within one millisecond their order is random
    const second = (await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(strategy.latestVersion.id, account.id))).body.data.id;
    expect((await h.call('GET', '/agentic-trading/runtimes?limit=1', token)).body.data.map((r: any) => r.id)).toEqual([second]);
    expect((await h.call('GET', `/agentic-trading/runtimes?limit=1&before=${second}`, token)).body.data.map((r: any) => r.id)).toEqual([runtimeId]);
    expect((await h.call('GET', `/agentic-trading/accounts?before=${account.id}`, token)).body.data).toEqual([]);
    for (const bad of ['limit=0', 'limit=501', 'before=nope']) expect((await h.call('GET', `/agentic-trading/runtimes?${bad}`, token)).status).toBe(400);
  });

  it('creates once per idempotencyKey: the same body answers the runtime, another body is a conflict', async () => {
    const { token, strategy, account } = await launch(h, 'dave');
    const body = runtimeBody(strategy.latestVersion.id, account.id, { idempotencyKey: 'launch-1' });
    const results = await Promise.all(Array.from({ length: 6 }, () => h.call('POST', '/agentic-trading/runtimes', token, body)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
    expect(new Set(results.map((r) => r.body.data.id)).size).toBe(1);
    const changed = await h.call('POST', '/agentic-trading/runtimes', token, { ...body, fundLimitUsd: 5 });
    expect(changed).toMatchObject({ status: 409, body: { data: { reason: 'idempotency_key_reused', runtimeId: results[0]!.body.data.id } } });
  });

  it('keeps tenants apart and refuses bad definitions with the spec envelope', async () => {
    const { token, runtimeId, strategy, account } = await launch(h, 'erin');
    const mallory = await h.app.identityToken('mallory');
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, mallory)).status).toBe(404);
    expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, mallory, { status: 'paused' })).status).toBe(404);
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions`, mallory)).status).toBe(404);
    expect((await h.call('GET', `/agentic-trading/strategies/${strategy.id}`, mallory)).status).toBe(404);
    expect((await h.call('GET', '/agentic-trading/runtimes', mallory)).body.data).toEqual([]);
    // Launching on someone else's account or private strategy: not found.
    const malloryStrategy = (await h.call('POST', '/agentic-trading/strategies', mallory, strategyBody())).body.data;
    const malloryAccount = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', mallory, {})).body.data;
    expect((await h.call('POST', '/agentic-trading/runtimes', mallory, runtimeBody(strategy.latestVersion.id, malloryAccount.id))).body.data.reason).toBe('strategy_version_not_found');
    expect((await h.call('POST', '/agentic-trading/runtimes', mallory, runtimeBody(malloryStrategy.latestVersion.id, account.id))).body.data.reason).toBe('account_not_found');
    // A public strategy is readable and launchable by others.
    const shared = (await h.call('POST', '/agentic-trading/strategies', token, { ...strategyBody(), visibility: 'public' })).body.data;
    expect((await h.call('GET', '/agentic-trading/strategies', mallory)).body.data.map((s: any) => s.id)).toContain(shared.id);
    expect((await h.call('POST', '/agentic-trading/runtimes', mallory, runtimeBody(shared.latestVersion.id, malloryAccount.id))).status).toBe(201);
    expect((await h.call('POST', `/agentic-trading/strategies/${shared.id}/versions`, mallory, strategyBody().version)).status).toBe(404);

    const bad = [
      strategyBody('fast=9 slow=3'),
      strategyBody('x', { dataSources: ['bloomberg'] }),
      strategyBody('x', { universe: ['btc usd'] }),
      strategyBody('x', { candleInterval: '2m' }),
      { ...strategyBody(), version: { ...strategyBody().version, kind: 'llm' } },
    ];
    for (const body of bad) {
      const refused = await h.call('POST', '/agentic-trading/strategies', token, body);
      expect(refused.status).toBe(400);
      expect(refused.body.code).toBe(1000);
    }
    const badCron = await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(strategy.latestVersion.id, account.id, { cronExpression: '* * *' }));
    expect(badCron).toMatchObject({ status: 400, body: { data: { reason: 'invalid_cron_expression' } } });
    expect((await h.call('GET', '/agentic-trading/runtimes', null)).status).toBe(401);
  });
});
