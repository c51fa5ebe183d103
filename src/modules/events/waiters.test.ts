import { describe, expect, it } from 'vitest';
import { ClaimWaiters } from './waiters.js';

/** A fake queue: claims take items in order; publishing wakes the waiters like NOTIFY does. */
function fakeQueue(waiters: ClaimWaiters, queueId = 'q') {
  const items: string[] = [];
  const released: string[] = [];
  let attempts = 0;
  return {
    items,
    released,
    attempts: () => attempts,
    publish(item: string) {
      items.push(item);
      waiters.wake(queueId);
    },
    claim(who: string, waitMs: number, signal?: AbortSignal) {
      return waiters.claim<string>({
        queueId,
        waitMs,
        signal,
        attempt: async () => {
          attempts += 1;
          await new Promise((resolve) => setImmediate(resolve));
          const item = items.shift();
          return item === undefined ? null : `${who}:${item}`;
        },
        release: async (value) => {
          released.push(value);
        },
      });
    },
  };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('ClaimWaiters', () => {
  it('claims at once when there is work and nobody waits', async () => {
    const waiters = new ClaimWaiters();
    const queue = fakeQueue(waiters);
    queue.items.push('a');
    expect(await queue.claim('w1', 1000)).toBe('w1:a');
    expect(waiters.waitingCount()).toBe(0);
  });

  it('serves waiters first come, first served', async () => {
    const waiters = new ClaimWaiters();
    const queue = fakeQueue(waiters);
    const results = ['w1', 'w2', 'w3'].map((who) => queue.claim(who, 5000));
    await tick();
    expect(waiters.waitingCount('q')).toBe(3);
    // A newcomer queues behind them rather than jumping ahead.
    const late = queue.claim('w4', 5000);
    queue.publish('e1');
    queue.publish('e2');
    expect(await results[0]).toBe('w1:e1');
    expect(await results[1]).toBe('w2:e2');
    queue.publish('e3');
    expect(await results[2]).toBe('w3:e3');
    queue.publish('e4');
    expect(await late).toBe('w4:e4');
    expect(waiters.waitingCount()).toBe(0);
  });

  it('answers null after waitMs when nothing comes', async () => {
    const waiters = new ClaimWaiters();
    const queue = fakeQueue(waiters);
    const started = Date.now();
    expect(await queue.claim('w1', 150)).toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(waiters.waitingCount()).toBe(0);
  });

  it('stops waiting when the client goes away, and shutdown answers every waiter', async () => {
    const waiters = new ClaimWaiters();
    const queue = fakeQueue(waiters);
    const controller = new AbortController();
    const gone = queue.claim('w1', 5000, controller.signal);
    const staying = queue.claim('w2', 5000);
    await tick();
    controller.abort();
    expect(await gone).toBeNull();
    expect(waiters.waitingCount()).toBe(1);
    waiters.close();
    expect(await staying).toBeNull();
    // After close a claim tries once and does not wait.
    expect(await queue.claim('w3', 5000)).toBeNull();
  });

  it('hands back an event claimed for a waiter that left during the claim', async () => {
    const waiters = new ClaimWaiters();
    const items: string[] = [];
    const released: string[] = [];
    let gate!: () => void;
    const controller = new AbortController();
    const result = waiters.claim<string>({
      queueId: 'q',
      waitMs: 5000,
      signal: controller.signal,
      attempt: async () => {
        if (items.length === 0) return null;
        await new Promise<void>((resolve) => (gate = resolve));
        return items.shift()!;
      },
      release: async (value) => void released.push(value),
    });
    await tick();
    items.push('e1');
    waiters.wake('q');
    await tick();
    controller.abort();
    gate();
    expect(await result).toBeNull();
    await tick();
    expect(released).toEqual(['e1']);
  });

  it('a wake-up that arrives while a claim is trying is not lost', async () => {
    const waiters = new ClaimWaiters();
    const items: string[] = [];
    const started = Date.now();
    const result = waiters.claim<string>({
      queueId: 'q',
      waitMs: 5000,
      // Looks at the queue first, answers later: a publish in between must still wake it.
      attempt: async () => {
        const item = items.shift() ?? null;
        await new Promise((resolve) => setImmediate(resolve));
        return item;
      },
      release: async () => {},
    });
    items.push('e1');
    waiters.wake('q');
    expect(await result).toBe('e1');
    // Served by the missed wake-up, not by the once-a-second re-check.
    expect(Date.now() - started).toBeLessThan(500);
  });
});
