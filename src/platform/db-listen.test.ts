// The PostgreSQL listening connection: one a NAT or load balancer drops silently (packets vanish, nothing
// closes) is noticed by its heartbeat and replaced, and subscribers hear of both (the project-key cache
// stops trusting itself meanwhile). The drop is a TCP proxy that stops forwarding.
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { openDatabase } from './db.js';

const serverUrl = process.env.DATABASE_URL;

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}

describe.skipIf(!serverUrl)('the listening connection (PostgreSQL)', () => {
  it('a silently dropped connection is noticed within seconds, replaced, and hears notifications again', async () => {
    const upstream = new URL(serverUrl!);
    const pairs: Array<{ dead: boolean; inbound: net.Socket; outbound: net.Socket }> = [];
    const proxy = net.createServer((inbound) => {
      const outbound = net.connect(Number(upstream.port || 5432), upstream.hostname);
      const pair = { dead: false, inbound, outbound };
      pairs.push(pair);
      inbound.on('data', (chunk) => pair.dead || outbound.write(chunk));
      outbound.on('data', (chunk) => pair.dead || inbound.write(chunk));
      for (const socket of [inbound, outbound]) socket.on('error', () => {});
      inbound.on('close', () => outbound.destroy());
      outbound.on('close', () => inbound.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const viaProxy = new URL(serverUrl!);
    viaProxy.host = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
    const database = await openDatabase({ url: viaProxy.toString(), pgliteDir: null, poolSize: 2 });
    try {
      const states: boolean[] = [];
      const heard: string[] = [];
      await database.listen('tollgate_listen_test', (payload) => heard.push(payload), { onListening: (listening) => states.push(listening) });
      const listening = pairs[0]!; // the first connection opened; notify() takes a pool connection of its own
      await database.notify('tollgate_listen_test', 'before');
      expect(await until(() => heard.includes('before'), 5_000)).toBe(true);

      listening.dead = true; // packets vanish both ways, nothing closes
      expect(await until(() => states.includes(false), 10_000), 'the silent drop was never noticed').toBe(true);
      expect(await until(() => states.at(-1) === true, 10_000), 'never listening again').toBe(true);
      await database.notify('tollgate_listen_test', 'after');
      expect(await until(() => heard.includes('after'), 5_000)).toBe(true);
    } finally {
      await database.close();
      pairs.forEach((pair) => (pair.inbound.destroy(), pair.outbound.destroy()));
      proxy.close();
    }
  }, 60_000);
});
