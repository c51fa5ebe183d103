// Median latency that pay-and-call adds over a direct paid call of /x402-test/ping made by the same
// client with the same signer (the wallet's key), on the devchain. Target: ≤ 10 ms.
// Run: npx tsx bench/pay-and-call/run.ts   (BENCH_ITERATIONS=200, BENCH_DATABASE_URL=postgres://… to use PostgreSQL)
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { privateKeyToAccount } from 'viem/accounts';
import { readPaymentRequired, readSettlement, signPayment } from '../../src/x402/client.js';
import { machine, startProcess, stopProcess } from '../lib.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const iterations = Number(process.env.BENCH_ITERATIONS ?? 200);
const warmup = Number(process.env.BENCH_WARMUP ?? 20);
const TARGET_MS = 10;

interface Ready {
  api: string;
  address: string;
  secret: string;
  privateKey: `0x${string}`;
  network: string;
  asset: string;
  database: string;
}

const apiPort = await freePort();
const server = await startProcess(process.execPath, ['--import', 'tsx', path.join(here, 'server.ts')], { ...process.env, BENCH_API_PORT: String(apiPort) }, /^BENCH_READY (.+)$/m);
try {
  const ready = JSON.parse(server.match[1]) as Ready;
  const account = privateKeyToAccount(ready.privateKey);
  const ping = `${ready.api}/x402-test/ping`;
  const maxPayment = { network: ready.network, asset: ready.asset, amount: '100' };

  // The client paying by itself: challenge, sign (x402 client, same key), paid retry.
  const direct = async () => {
    const first = await fetch(ping);
    const challenge = readPaymentRequired((name) => first.headers.get(name), await first.json());
    const { header } = await signPayment(account, challenge, { allow: [{ ...maxPayment, maxAmountPerPayment: maxPayment.amount }] });
    const paid = await fetch(ping, { headers: { 'PAYMENT-SIGNATURE': header } });
    const body = (await paid.json()) as { message?: string };
    if (paid.status !== 200 || body.message !== 'paid pong' || !readSettlement((name) => paid.headers.get(name)).success) {
      throw new Error(`direct paid call failed: ${paid.status} ${JSON.stringify(body)}`);
    }
  };
  // The same payment through the wallet.
  const viaWallet = async () => {
    const response = await fetch(`${ready.api}/v1/wallets/me/pay-and-call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ready.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: ping, maxPayment }),
    });
    const body = (await response.json()) as { data?: { payment?: { status: string }; upstream?: { body?: { message?: string } } } };
    if (response.status !== 200 || body.data?.payment?.status !== 'settled' || body.data.upstream?.body?.message !== 'paid pong') {
      throw new Error(`pay-and-call failed: ${response.status} ${JSON.stringify(body)}`);
    }
  };

  const time = async (fn: () => Promise<void>) => {
    const start = performance.now();
    await fn();
    return performance.now() - start;
  };

  for (let i = 0; i < warmup; i += 1) {
    await direct();
    await viaWallet();
  }
  const directMs: number[] = [];
  const walletMs: number[] = [];
  const pairedMs: number[] = [];
  for (let i = 0; i < iterations; i += 1) {
    // Alternate which side goes first, so drift (chain growth, GC) hits both alike.
    let d: number;
    let w: number;
    if (i % 2 === 0) {
      d = await time(direct);
      w = await time(viaWallet);
    } else {
      w = await time(viaWallet);
      d = await time(direct);
    }
    directMs.push(d);
    walletMs.push(w);
    pairedMs.push(w - d);
  }

  const added = median(walletMs) - median(directMs);
  const lines = [
    `machine: ${machine()}; database ${ready.database}; ${iterations} sequential iterations per side after ${warmup} warm-up pairs`,
    '',
    '| path | median ms | p90 ms | p99 ms | mean ms |',
    '|---|---|---|---|---|',
    row('direct paid call (client signs)', directMs),
    row('pay-and-call (wallet signs)', walletMs),
    '',
    `added latency: median(pay-and-call) − median(direct) = ${added.toFixed(2)} ms; median of paired differences = ${median(pairedMs).toFixed(2)} ms (target ≤ ${TARGET_MS} ms) ${added <= TARGET_MS ? 'PASS' : 'MISS'}`,
  ];
  console.log(lines.join('\n'));
} finally {
  await stopProcess(server.child);
}

function row(name: string, values: number[]): string {
  const mean = values.reduce((sum, v) => sum + v, 0) / values.length;
  return `| ${name} | ${median(values).toFixed(2)} | ${quantile(values, 0.9).toFixed(2)} | ${quantile(values, 0.99).toFixed(2)} | ${mean.toFixed(2)} |`;
}

function median(values: number[]): number {
  return quantile(values, 0.5);
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const low = Math.floor(pos);
  return sorted[low] + (sorted[Math.min(low + 1, sorted.length - 1)] - sorted[low]) * (pos - low);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
