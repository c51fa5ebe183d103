import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { deadlineSignal } from './deadline.js';

v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

/** How the signal ended within `waitMs` while the heap is collected every 20 ms: its reason's name, or 'never'. */
async function outcome(signal: AbortSignal, waitMs: number): Promise<string> {
  const collecting = setInterval(collectGarbage, 20);
  try {
    return await new Promise<string>((resolve) => {
      signal.addEventListener('abort', () => resolve((signal.reason as Error).name), { once: true });
      setTimeout(() => resolve('never'), waitMs);
    });
  } finally {
    clearInterval(collecting);
  }
}

describe('deadlineSignal', () => {
  it('reaches its deadline although only the combined signal is held (Node 20 collects a lone AbortSignal.timeout)', async () => {
    const shutdown = new AbortController();
    expect(await outcome(deadlineSignal(200, shutdown.signal), 2_000)).toBe('TimeoutError');
    expect(await outcome(deadlineSignal(200), 2_000)).toBe('TimeoutError');
  });

  it('aborts with the other signal first, for its reason', async () => {
    const shutdown = new AbortController();
    const signal = deadlineSignal(60_000, shutdown.signal);
    setTimeout(() => shutdown.abort(new DOMException('closing', 'AbortError')), 50);
    expect(await outcome(signal, 2_000)).toBe('AbortError');
  });
});
