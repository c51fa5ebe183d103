import { describe, expect, it } from 'vitest';
import { CredentialCache, type CacheResult } from '../../src/platform/auth/credential-cache.js';

// The per-node cache behind project-key lookups (src/platform/auth/credential-cache.ts), alone: bounds,
// expiry, tag invalidation, and the races between a lookup in flight and an invalidation.

interface Principal {
  keyId: string;
  projectId: string;
}

function cacheOf(options: { maxEntries?: number; ttlMs?: number } = {}) {
  let now = 1_000_000;
  const cache = new CredentialCache<Principal>({
    maxEntries: options.maxEntries ?? 100,
    ttlMs: options.ttlMs ?? 10_000,
    tagsOf: (p) => [`key:${p.keyId}`, `project:${p.projectId}`],
    now: () => now,
  });
  cache.setListening(true);
  const results: CacheResult[] = [];
  const loads: string[] = [];
  /** Looks `hash` up; the "database" answers from `rows`. */
  const get = (hash: string, rows: Record<string, Principal | null>) =>
    cache.get(
      hash,
      async () => {
        loads.push(hash);
        return rows[hash] ?? null;
      },
      (result) => results.push(result),
    );
  return { cache, get, results, loads, advance: (ms: number) => (now += ms) };
}

const rows: Record<string, Principal> = {
  h1: { keyId: 'k1', projectId: 'p1' },
  h2: { keyId: 'k2', projectId: 'p1' },
  h3: { keyId: 'k3', projectId: 'p2' },
  h4: { keyId: 'k4', projectId: 'p2' },
};

/** A load the test finishes by hand. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('credential cache', () => {
  it('answers a found credential from memory after the first lookup', async () => {
    const { get, results, loads } = cacheOf();
    expect(await get('h1', rows)).toEqual(rows.h1);
    expect(await get('h1', rows)).toEqual(rows.h1);
    expect(await get('h1', rows)).toEqual(rows.h1);
    expect(loads).toEqual(['h1']);
    expect(results).toEqual(['miss', 'hit', 'hit']);
  });

  it('never keeps a miss, so a spray of random secrets neither grows it nor evicts a hot key', async () => {
    const { cache, get, loads } = cacheOf({ maxEntries: 10 });
    await get('h1', rows);
    for (let i = 0; i < 5_000; i++) expect(await get(`random-${i}`, rows)).toBeNull();
    expect(cache.size).toBe(1);
    // The same unknown secret again is a lookup again (a key created meanwhile would be found).
    expect(await get('random-0', { 'random-0': { keyId: 'new', projectId: 'p9' } })).toEqual({ keyId: 'new', projectId: 'p9' });
    loads.length = 0;
    expect(await get('h1', rows)).toEqual(rows.h1);
    expect(loads).toEqual([]);
  });

  it('holds at most maxEntries, dropping the least recently used', async () => {
    const { cache, get, loads } = cacheOf({ maxEntries: 3 });
    await get('h1', rows);
    await get('h2', rows);
    await get('h3', rows);
    await get('h1', rows); // h1 is now the most recent; h2 the least
    await get('h4', rows);
    expect(cache.size).toBe(3);
    loads.length = 0;
    await get('h1', rows);
    await get('h3', rows);
    await get('h4', rows);
    expect(loads).toEqual([]);
    await get('h2', rows);
    expect(loads).toEqual(['h2']);
    expect(cache.size).toBe(3);
  });

  it('reads the database again once an entry is older than the TTL (the safety net for a lost notification)', async () => {
    const { get, loads, advance } = cacheOf({ ttlMs: 10_000 });
    await get('h1', rows);
    advance(9_999);
    await get('h1', rows);
    expect(loads).toEqual(['h1']);
    advance(1);
    expect(await get('h1', { h1: { ...rows.h1!, projectId: 'moved' } })).toEqual({ keyId: 'k1', projectId: 'moved' });
    expect(loads).toEqual(['h1', 'h1']);
  });

  it('drops every entry of a key or of a project at once, and only those', async () => {
    const { cache, get, loads } = cacheOf();
    for (const hash of ['h1', 'h2', 'h3', 'h4']) await get(hash, rows);
    cache.invalidate('key:k3');
    cache.invalidate('project:p1');
    expect(cache.size).toBe(1);
    loads.length = 0;
    for (const hash of ['h1', 'h2', 'h3', 'h4']) await get(hash, rows);
    expect(loads).toEqual(['h1', 'h2', 'h3']);
    cache.invalidate('project:unknown');
    expect(cache.size).toBe(4);
  });

  it('does not keep what a lookup read when an invalidation ran while it was in flight', async () => {
    const { cache, results } = cacheOf();
    const slow = deferred<Principal | null>();
    const first = cache.get('h1', () => slow.promise, (r) => results.push(r));
    // The revoke commits and its notification arrives while the read (of the row before it) is in flight.
    cache.invalidate('key:k1');
    // A request after the notification must not join the stale read: it reads on its own.
    const after = cache.get('h1', async () => null, (r) => results.push(r));
    slow.resolve(rows.h1!);
    expect(await first).toEqual(rows.h1); // the request that raced the revoke: as without a cache
    expect(await after).toBeNull();
    expect(cache.size).toBe(0);
    let reloaded = false;
    await cache.get('h1', async () => ((reloaded = true), null));
    expect(reloaded).toBe(true);
  });

  it('shares one lookup between concurrent requests with the same secret', async () => {
    const { cache } = cacheOf();
    const slow = deferred<Principal | null>();
    let calls = 0;
    const load = () => ((calls += 1), slow.promise);
    const all = Promise.all([cache.get('h1', load), cache.get('h1', load), cache.get('h1', load)]);
    slow.resolve(rows.h1!);
    expect(await all).toEqual([rows.h1, rows.h1, rows.h1]);
    expect(calls).toBe(1);
    expect(cache.size).toBe(1);
  });

  it('is bypassed while invalidations are not heard, and starts empty when they are again', async () => {
    const { cache, get, loads, results } = cacheOf();
    await get('h1', rows);
    cache.setListening(false); // the LISTEN connection dropped
    expect(cache.size).toBe(0);
    await get('h1', rows);
    await get('h1', rows);
    expect(cache.size).toBe(0);
    cache.setListening(true);
    await get('h1', rows);
    await get('h1', rows);
    expect(loads).toEqual(['h1', 'h1', 'h1', 'h1']);
    expect(results).toEqual(['miss', 'bypass', 'bypass', 'miss', 'hit']);
    // A lookup in flight across a drop and a reconnect must not fill the fresh cache with what it read before.
    const slow = deferred<Principal | null>();
    const inFlight = cache.get('h2', () => slow.promise);
    cache.setListening(false);
    cache.setListening(true);
    slow.resolve(rows.h2!);
    await inFlight;
    expect(cache.size).toBe(0);
  });
});
