// A benchmark worker: its own process and connection pool, draining fired ticks with the service's tick
// consumer (what a `worker` role runs) each time the parent says go, and reporting when it found no more.
import { ManualClock } from '../../src/platform/clock.js';
import { startBenchServer } from '../bench-server.js';

// No origins, no loops: this process only drains when told (BENCH_DATABASE_URL and CHAIN_RPC_URL come from the parent).
// Its clock is the tick's, set by each go: the ticks are hours old by the wall clock, and a tick run after its
// next one was due is skipped as stale.
const clock = new ManualClock(new Date());
const node = await startBenchServer('trading-worker', { roles: [], clock });
const consumer = node.ctx.services.trading.consumer;

process.on('message', async (message: { type: string; at?: string }) => {
  if (message.type === 'stop') {
    await node.stop();
    process.exit(0);
  }
  if (message.type !== 'go') return;
  clock.set(new Date(message.at!));
  let handled = 0;
  const cpu = process.cpuUsage();
  for (let n; (n = await consumer.drain()) > 0; ) handled += n;
  const used = process.cpuUsage(cpu);
  process.send!({ type: 'done', handled, endedAt: Date.now(), cpuMs: (used.user + used.system) / 1000 });
});
process.send!({ type: 'ready' });
