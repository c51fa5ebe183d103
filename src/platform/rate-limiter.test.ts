import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase, type TestDatabase } from '../../test/helpers/database.js';
import { ManualClock } from './clock.js';
import { MemoryRateLimiter, RateLimiter } from './rate-limiter.js';

let testDb: TestDatabase;
const clock = new ManualClock('2026-01-01T00:00:10Z');
let limiter: RateLimiter;

beforeAll(async () => {
  testDb = await openTestDatabase();
  limiter = new RateLimiter(testDb.database.db, clock);
});
afterAll(async () => {
  await testDb?.close();
});

describe('RateLimiter', () => {
  it('admits exactly the limit under concurrent hits', async () => {
    const results = await Promise.all(Array.from({ length: 40 }, () => limiter.hit('burst', { limit: 10, windowSeconds: 60 })));
    expect(results.filter((r) => r.allowed)).toHaveLength(10);
    expect(results.map((r) => r.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(results.find((r) => !r.allowed)?.retryAfterSeconds).toBe(50);
  });

  it('starts a fresh window when the old one ends, and keys are independent', async () => {
    const rule = { limit: 2, windowSeconds: 10 };
    clock.set('2026-01-01T00:01:00Z');
    expect((await limiter.hit('roll', rule)).allowed).toBe(true);
    expect((await limiter.hit('roll', rule)).allowed).toBe(true);
    expect((await limiter.hit('roll', rule)).allowed).toBe(false);
    expect((await limiter.hit('other', rule)).allowed).toBe(true);
    clock.advance(10_000);
    expect(await limiter.hit('roll', rule)).toMatchObject({ allowed: true, count: 1 });
  });

  it('prunes counters of ended windows', async () => {
    clock.advance(2 * 3600 * 1000);
    expect(await limiter.prune()).toBeGreaterThanOrEqual(3);
    expect(await limiter.hit('roll', { limit: 1, windowSeconds: 10 })).toMatchObject({ count: 1 });
  });
});

describe('MemoryRateLimiter', () => {
  it('counts fixed windows per key in this process', () => {
    const local = new MemoryRateLimiter(new ManualClock('2026-01-01T00:00:05Z'));
    const rule = { limit: 2, windowSeconds: 10 };
    expect(local.hit('a', rule)).toMatchObject({ allowed: true, count: 1 });
    expect(local.hit('a', rule)).toMatchObject({ allowed: true, count: 2 });
    expect(local.hit('a', rule)).toMatchObject({ allowed: false, count: 3, retryAfterSeconds: 5 });
    expect(local.hit('b', rule).allowed).toBe(true);
  });

  it('starts over when the window ends', () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const local = new MemoryRateLimiter(clock);
    const rule = { limit: 1, windowSeconds: 10 };
    expect(local.hit('a', rule).allowed).toBe(true);
    expect(local.hit('a', rule).allowed).toBe(false);
    clock.advance(10_000);
    expect(local.hit('a', rule)).toMatchObject({ allowed: true, count: 1 });
  });
});
