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

  it('hitMany counts each key on its own, in one statement, answering in the order given', async () => {
    clock.set('2026-01-01T00:02:03Z');
    await limiter.hit('many:b', { limit: 5, windowSeconds: 10 });
    const results = await limiter.hitMany(
      [
        { key: 'many:c', limit: 1 },
        { key: 'many:b', limit: 1 },
        { key: 'many:a', limit: 3 },
      ],
      10,
    );
    expect(results).toEqual([
      { allowed: true, count: 1, retryAfterSeconds: 7 },
      { allowed: false, count: 2, retryAfterSeconds: 7 },
      { allowed: true, count: 1, retryAfterSeconds: 7 },
    ]);
    // The counts it leaves are the ones hit reads on.
    expect(await limiter.hit('many:b', { limit: 5, windowSeconds: 10 })).toMatchObject({ allowed: true, count: 3 });
    expect(await limiter.hit('many:a', { limit: 1, windowSeconds: 10 })).toMatchObject({ allowed: false, count: 2 });
    expect(await limiter.hitMany([], 10)).toEqual([]);
    await expect(limiter.hitMany([{ key: 'dup', limit: 1 }, { key: 'dup', limit: 1 }], 10)).rejects.toThrow(/distinct/);
  });

  it('hitMany starts a fresh window for every key when the old one ends', async () => {
    clock.set('2026-01-01T00:03:00Z');
    const keys = [
      { key: 'roll-many:x', limit: 2 },
      { key: 'roll-many:y', limit: 2 },
    ];
    await limiter.hitMany(keys, 10);
    await limiter.hitMany(keys, 10);
    expect((await limiter.hitMany(keys, 10)).map((r) => r.allowed)).toEqual([false, false]);
    clock.advance(9_000);
    expect(await limiter.hitMany(keys.slice(1), 10)).toEqual([{ allowed: false, count: 4, retryAfterSeconds: 1 }]);
    clock.advance(1_000);
    expect(await limiter.hitMany(keys, 10)).toEqual([
      { allowed: true, count: 1, retryAfterSeconds: 10 },
      { allowed: true, count: 1, retryAfterSeconds: 10 },
    ]);
  });

  it('hitMany admits exactly the limit of each key under concurrent overlapping calls', async () => {
    clock.set('2026-01-01T00:04:00Z');
    // Shared keys given in different orders by each caller (PostgreSQL: no deadlock), plus one key of its own each.
    const calls = Array.from({ length: 30 }, (_, i) => {
      const shared = [
        { key: 'overlap:p', limit: 10 },
        { key: 'overlap:q', limit: 20 },
      ];
      return [{ key: `overlap:own:${i}`, limit: 1 }, ...(i % 2 ? shared : shared.reverse())];
    });
    const results = await Promise.all(calls.map((hits) => limiter.hitMany(hits, 60)));
    const of = (key: string) => results.map((answers, i) => answers[calls[i]!.findIndex((h) => h.key === key)]!);
    expect(of('overlap:p').filter((r) => r.allowed)).toHaveLength(10);
    expect(of('overlap:q').filter((r) => r.allowed)).toHaveLength(20);
    for (const key of ['overlap:p', 'overlap:q']) {
      expect(of(key).map((r) => r.count).sort((x, y) => x - y)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    }
    expect(results.map((r) => r[0])).toEqual(Array.from({ length: 30 }, () => ({ allowed: true, count: 1, retryAfterSeconds: 60 })));
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
