// Parameter optimisation of a rules strategy through the API (issue 42, item 8): trials ranked by their
// objective, each trial's report the one a backtest of a version published with its values answers; walk-forward
// folds whose out-of-sample replay is that same backtest over the out-of-sample part; a seeded random search;
// and the refusals (another user's priced strategy, a strategy without rules, a path that names no number).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTradingHarness, strategyBody, type TradingHarness } from './harness.js';

let h: TradingHarness;
beforeAll(async () => {
  h = await openTradingHarness();
});
afterAll(async () => h?.close());

const rules = {
  indicators: { fast: { type: 'ema', period: 3 }, slow: { type: 'ema', period: 8 } },
  entry: { long: [{ left: 'fast', op: 'crosses_above', right: 'slow' }], short: [{ left: 'fast', op: 'crosses_below', right: 'slow' }] },
  exit: { long: [{ left: 'fast', op: 'crosses_below', right: 'slow' }], short: [{ left: 'fast', op: 'crosses_above', right: 'slow' }] },
  sizing: { exposure: 1 },
};
const definition = (r: object = rules) => ({ instructions: 'EMA cross, both ways.', universe: ['BTC-USD'], dataSources: ['embedded'], candleInterval: '1m', rules: r });
const version = (r?: object) => ({ kind: 'quant_signal', schemaVersion: 1, definition: definition(r) });
/** The rules with a trial's values set at their paths. */
function withValues(values: Record<string, number>) {
  const copy = structuredClone(rules) as any;
  for (const [path, value] of Object.entries(values)) {
    const keys = path.split('.');
    keys.slice(0, -1).reduce((node, key) => node[key], copy)[keys.at(-1)!] = value;
  }
  return copy;
}
const MINUTE = 60_000;

describe('optimisation', () => {
  it('ranks the trials by the objective, each reporting what a backtest of its values reports, and walks forward', { timeout: 180_000 }, async () => {
    const token = await h.app.identityToken('quant');
    const strategy = (await h.call('POST', '/agentic-trading/strategies', token, { name: 'ema', version: version() })).body.data;
    const to = new Date(Math.floor(h.clock.now().getTime() / MINUTE) * MINUTE - 60 * MINUTE);
    const window = { from: new Date(to.getTime() - 360 * MINUTE).toISOString(), to: to.toISOString(), fundLimitUsd: 10_000, maxLeverage: 1, maxDrawdownPercent: 90 };
    const parameters = [
      { path: 'indicators.fast.period', min: 2, max: 4, step: 1 },
      { path: 'indicators.slow.period', min: 6, max: 10, step: 2 },
    ];
    const optimised = await h.call('POST', `/agentic-trading/strategies/${strategy.id}/optimise`, token, { ...window, parameters, objective: 'sharpe', top: 9 });
    expect(optimised.status).toBe(200);
    const result = optimised.body.data;
    expect(result).toMatchObject({ strategyVersionId: strategy.latestVersion.id, ticks: 361, objective: 'sharpe', method: 'grid', trialsRun: 9, folds: [], walkForwardEfficiency: null });
    expect(result.trials).toHaveLength(9);
    const objectives = result.trials.map((t: any) => t.objective);
    expect(objectives).toEqual([...objectives].sort((a: number, b: number) => b - a));
    expect(new Set(objectives).size).toBeGreaterThan(3);
    for (const t of result.trials) expect(t.objective).toBe(t.report.sharpe);
    expect(result.best).toEqual(result.trials[0]);

    // Independently: publish the best and the worst trial's values as versions, and backtest them over the window.
    for (const trial of [result.trials[0], result.trials[8]]) {
      const published = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/versions`, token, version(withValues(trial.values)))).body.data.latestVersion;
      const backtest = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, token, { ...window, versionId: published.id, executionsLimit: 0 })).body.data;
      expect(backtest.report).toEqual(trial.report);
    }

    // Ranked by return instead: the same reports, another order.
    const byReturn = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/optimise`, token, { ...window, versionId: strategy.latestVersion.id, parameters, objective: 'return', top: 9 })).body.data;
    expect(byReturn.trials.map((t: any) => t.objective)).toEqual(byReturn.trials.map((t: any) => t.report.returnPercent));
    expect(byReturn.trials.map((t: any) => t.objective)).toEqual([...byReturn.trials.map((t: any) => t.objective)].sort((a: number, b: number) => b - a));

    // Walk-forward: 3 folds, 75 % in sample. The out-of-sample parts follow each other to the window's end, and
    // each one's report is a backtest of the fold's in-sample best over that part.
    const walked = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/optimise`, token, { ...window, versionId: strategy.latestVersion.id, parameters, walkForward: { folds: 3, inSamplePercent: 75 }, top: 3 })).body.data;
    expect(walked.trialsRun).toBe(27);
    expect(walked.folds).toHaveLength(3);
    // 361 ticks: an out-of-sample part of floor(361 × 0.25 / 1.5) = 60 ticks, an in-sample part of 181.
    expect(walked.folds.map((f: any) => [f.inSample.ticks, f.outOfSample.ticks])).toEqual([[181, 60], [181, 60], [181, 60]]);
    expect(walked.folds.at(-1).outOfSample.to).toBe(window.to);
    for (const [k, fold] of walked.folds.entries()) {
      expect(Date.parse(fold.outOfSample.from)).toBe(Date.parse(fold.inSample.to) + MINUTE);
      if (k > 0) expect(Date.parse(fold.outOfSample.from)).toBe(Date.parse(walked.folds[k - 1].outOfSample.to) + MINUTE);
      expect(fold.inSample.trials).toHaveLength(3);
      expect(fold.inSample.best).toEqual(fold.inSample.trials[0]);
      expect(fold.outOfSample.values).toEqual(fold.inSample.best.values);
    }
    const fold = walked.folds[1];
    const published = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/versions`, token, version(withValues(fold.outOfSample.values)))).body.data.latestVersion;
    const unseen = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, token, { ...window, from: fold.outOfSample.from, to: fold.outOfSample.to, versionId: published.id, executionsLimit: 0 })).body.data;
    expect(unseen.report).toEqual(fold.outOfSample.report);
    expect(fold.outOfSample.objective).toBe(unseen.report.sharpe);
    const ratios = walked.folds.filter((f: any) => f.inSample.best.objective && f.outOfSample.objective !== null).map((f: any) => f.outOfSample.objective / f.inSample.best.objective);
    expect(walked.walkForwardEfficiency).toBeCloseTo(ratios.reduce((a: number, b: number) => a + b, 0) / ratios.length, 12);

    // A random search: the same seed draws the same trials; a value the rules refuse is a trial that did not run.
    const random = { ...window, versionId: strategy.latestVersion.id, method: 'random', trials: 5, seed: 42, parameters: [{ path: 'indicators.fast.period', min: 1, max: 5, step: 1 }, { path: 'sizing.exposure', min: 0.5, max: 1, step: 0.25 }] };
    const drawn = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/optimise`, token, { ...random, top: 5 })).body.data;
    expect(drawn.trialsRun).toBe(5);
    expect((await h.call('POST', `/agentic-trading/strategies/${strategy.id}/optimise`, token, { ...random, top: 5 })).body.data.trials).toEqual(drawn.trials);
    for (const t of drawn.trials) {
      if (t.values['indicators.fast.period'] === 1) expect(t).toMatchObject({ objective: null, report: null, invalid: expect.stringContaining('indicators.fast.period') });
      else expect(t.report).not.toBeNull();
    }
  });

  it('refuses what it cannot optimise, naming why', async () => {
    const owner = await h.app.identityToken('seller');
    const priced = (await h.call('POST', '/agentic-trading/strategies', owner, { name: 'priced', visibility: 'public', access: { priceUsd: '1.00', payTo: '0x000000000000000000000000000000000000dEaD' }, version: version() })).body.data;
    const to = new Date(Math.floor(h.clock.now().getTime() / MINUTE) * MINUTE - 60 * MINUTE);
    const body = { from: new Date(to.getTime() - 60 * MINUTE).toISOString(), to: to.toISOString(), fundLimitUsd: 1_000, maxLeverage: 1, maxDrawdownPercent: 50, parameters: [{ path: 'indicators.fast.period', min: 2, max: 4, step: 1 }] };
    const buyer = await h.app.identityToken('buyer');
    const refused = await h.call('POST', `/agentic-trading/strategies/${priced.id}/optimise`, buyer, body);
    expect(refused).toMatchObject({ status: 400, body: { data: { reason: 'invalid_backtest' } } });
    expect(refused.body.message).toMatch(/only a strategy whose definition you read/);
    // Its owner may.
    expect((await h.call('POST', `/agentic-trading/strategies/${priced.id}/optimise`, owner, body)).status).toBe(200);

    const tokens = (await h.call('POST', '/agentic-trading/strategies', owner, strategyBody())).body.data;
    expect((await h.call('POST', `/agentic-trading/strategies/${tokens.id}/optimise`, owner, body)).body.message).toMatch(/only a quant_signal version with rules/);
    const badPath = await h.call('POST', `/agentic-trading/strategies/${priced.id}/optimise`, owner, { ...body, parameters: [{ path: 'indicators.fast.kind', min: 1, max: 2, step: 1 }] });
    expect(badPath).toMatchObject({ status: 400, body: { message: expect.stringContaining('indicators.fast.kind names no number in the rules') } });
    const big = await h.call('POST', `/agentic-trading/strategies/${priced.id}/optimise`, owner, { ...body, trials: 2 });
    expect(big.body.message).toMatch(/the grid holds 3 combinations, above trials \(2\)/);
    // The work of all trials together is bounded: 1,000 trials × 1,441 ticks.
    const day = { ...body, from: new Date(to.getTime() - 1440 * MINUTE).toISOString(), method: 'random', trials: 1000, parameters: [{ path: 'sizing.exposure', min: 0.001, max: 1, step: 0.001 }] };
    expect((await h.call('POST', `/agentic-trading/strategies/${priced.id}/optimise`, owner, day)).body).toMatchObject({ data: { reason: 'invalid_backtest_window' }, message: expect.stringContaining('the trials replay 1441000 ticks in all, above 1000000') });
    const mallory = await h.app.identityToken('mallory');
    const hidden = (await h.call('POST', '/agentic-trading/strategies', owner, { name: 'hidden', version: version() })).body.data;
    expect((await h.call('POST', `/agentic-trading/strategies/${hidden.id}/optimise`, mallory, body)).status).toBe(404);
    expect((await h.call('POST', `/agentic-trading/strategies/${hidden.id}/optimise`, null, body)).status).toBe(401);
  });
});
