import http from 'node:http';
import type { AddressInfo } from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RuntimeClient } from './runtime-client.js';
import type { InstanceRow } from './store.js';

v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

describe('RuntimeClient', () => {
  // A runtime that takes the request and never answers (as one stopped by SIGSTOP does).
  const hung = http.createServer(() => {});
  let instance: InstanceRow;
  beforeAll(async () => {
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    instance = { id: 'inst_1', agentId: 'agt_1', url: `http://127.0.0.1:${(hung.address() as AddressInfo).port}`, sealedToken: 'sealed' } as InstanceRow;
  });
  afterAll(() => {
    hung.closeAllConnections();
    hung.close();
  });

  it("gives up on a hung runtime at the request's timeout although the heap is collected meanwhile (the supervisor's probe once waited forever)", async () => {
    const client = new RuntimeClient({ open: () => 'token' }, pino({ level: 'silent' }));
    const collecting = setInterval(collectGarbage, 20);
    const started = Date.now();
    try {
      const failure = await Promise.race([
        client.fetch(instance, { method: 'GET', path: '/probe', timeoutMs: 300, signal: new AbortController().signal }).then(() => 'answered', (error: Error) => error.name),
        new Promise((resolve) => setTimeout(() => resolve('still waiting after 3 s'), 3_000)),
      ]);
      expect(failure).toBe('TimeoutError');
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      clearInterval(collecting);
    }
  });
});
