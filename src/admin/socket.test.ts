import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createPublicClient, http } from 'viem';
import { afterAll, describe, expect, it } from 'vitest';
import type { AppContext } from '../context.js';
import { callAdminSocket, startAdminSocket } from './socket.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-admin-socket-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

describe('admin socket', () => {
  it("a command failing on the chain RPC answers the CLI with the host, not the URL's key in its path or query", async () => {
    const client = createPublicClient({ transport: http('http://127.0.0.1:1/v2/PATHKEY123?apikey=QUERYKEY456', { retryCount: 0 }) });
    const ctx = { config: { dataDir }, log: pino({ level: 'silent' }) } as unknown as AppContext;
    const socket = await startAdminSocket(ctx, { 'chain.block': async () => client.getBlockNumber() });
    try {
      const error = (await callAdminSocket(dataDir, 'chain.block', {}).catch((e: unknown) => e)) as Error;
      expect(error.message).toContain('http://127.0.0.1:1/[redacted]');
      expect(error.message).not.toMatch(/PATHKEY123|QUERYKEY456/);
    } finally {
      await socket.close();
    }
  });
});
