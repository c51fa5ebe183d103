import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Database } from './db.js';
import { LoopRunner } from './jobs.js';

const log = pino({ level: 'silent' });
const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise.then(() => 'done' as const), new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), ms))]);

describe('LoopRunner.stop', () => {
  it('ends promptly when a run is under way: the loop does not go on to sleep its interval', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const runner = new LoopRunner({} as Database, log);
    runner.start([
      {
        name: 'slow-hourly',
        intervalMs: 3_600_000,
        run: async () => {
          started();
          await new Promise((resolve) => setTimeout(resolve, 100));
        },
      },
    ]);
    await running;
    expect(await within(runner.stop(), 2_000)).toBe('done');
  });

  it('ends promptly when a run under way fails: the loop does not go on to back off', async () => {
    let failed!: () => void;
    const failing = new Promise<void>((resolve) => (failed = resolve));
    const runner = new LoopRunner({} as Database, log);
    runner.start([
      {
        name: 'failing',
        intervalMs: 60_000,
        run: async () => {
          failed();
          await new Promise((resolve) => setTimeout(resolve, 100));
          throw new Error('boom');
        },
      },
    ]);
    await failing;
    expect(await within(runner.stop(), 2_000)).toBe('done');
  });
});

describe('LoopRunner.report', () => {
  it('tells operators each loop\'s last run, failures in a row and last error, which outlives a later good run', async () => {
    let calls = 0;
    const runner = new LoopRunner({} as Database, log);
    runner.start([
      {
        name: 'flaky',
        intervalMs: 100, // the retry after the failure waits 2 intervals: time to read the failure
        run: async () => {
          calls += 1;
          if (calls === 1) throw new Error('upstream down');
        },
      },
    ]);
    while (!runner.report()[0].lastError) await new Promise((resolve) => setTimeout(resolve, 5));
    const failed = runner.report()[0];
    expect(failed).toMatchObject({ name: 'flaky', active: true, consecutiveFailures: 1, lastError: { message: 'upstream down' } });
    while (calls < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 5));
    const [recovered] = runner.report();
    expect(recovered).toMatchObject({ consecutiveFailures: 0, lastError: { message: 'upstream down', at: failed.lastError!.at } });
    expect(Date.parse(recovered.lastRunAt!)).toBeGreaterThanOrEqual(Date.parse(failed.lastRunAt!));
    await runner.stop();
  });
});

describe('LoopRunner.report of a loop failing on the chain RPC', () => {
  it('shows the last error (which `tollgate status` prints) with the RPC host and neither form of its key', async () => {
    const runner = new LoopRunner({} as Database, log);
    runner.start([
      {
        name: 'indexer',
        intervalMs: 60_000,
        run: async () => {
          throw new Error('HTTP request failed.\n\nURL: https://rpc.example.com/v2/PATHKEY123?apikey=QUERYKEY456\nRequest body: {"method":"eth_blockNumber"}');
        },
      },
    ]);
    while (!runner.report()[0].lastError) await new Promise((resolve) => setTimeout(resolve, 5));
    const { message } = runner.report()[0].lastError!;
    expect(message).toContain('https://rpc.example.com/[redacted]');
    expect(message).not.toMatch(/PATHKEY123|QUERYKEY456|eth_blockNumber/);
    await runner.stop();
  });
});
