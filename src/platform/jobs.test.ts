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
