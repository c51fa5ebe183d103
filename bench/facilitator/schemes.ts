// exact (EIP-3009) against batch-settlement through our facilitator, in one run on one devchain: BENCH_PAYMENTS
// payments of BENCH_PRICE atomic units ($0.001 by default) from one buyer to one official @x402/express seller,
// paid with the official @x402/fetch client, one call after another (a buyer's calls to one seller are sequential
// in batch-settlement: the seller serializes a channel). batch-settlement then claims every voucher in one
// transaction and sweeps the seller's total in another (the seller's channel manager, claimAndSettle).
// Reported per scheme: the relayer's on-chain transactions and gas, the payee's balance, and payments per second
// (the calls; for batch-settlement also with its claim and sweep counted in).
// Run: npx tsx bench/facilitator/schemes.ts   Env: BENCH_PAYMENTS (default 1000), BENCH_PRICE (default 1000),
//      DATABASE_URL (PostgreSQL instead of PGlite).
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { x402Client, x402HTTPClient } from '@x402/core/client';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { wrapFetchWithPayment } from '@x402/fetch';
import express from 'express';
import type { Address } from 'viem';
import { buildTestApp, type TestApp } from '../../test/helpers/test-app.js';
import { batchBuyer, startBatchSeller } from '../../test/facilitator/batch-support.js';
import { fundedPayer, randomAddress } from '../../test/x402/support.js';
import { machine } from '../lib.js';

const payments = Number(process.env.BENCH_PAYMENTS ?? 1000);
const price = process.env.BENCH_PRICE ?? '1000';
const NETWORK = 'eip155:4663';

interface Row {
  scheme: string;
  payments: number;
  transactions: number;
  gas: bigint;
  paid: bigint;
  seconds: number;
  settleSeconds: number;
}

const app = await buildTestApp({ env: { LOG_LEVEL: 'silent', FACILITATOR_SETTLE_LIMIT_PER_PAYER: '100000', FACILITATOR_SETTLE_LIMIT_PER_PAY_TO: '100000', FACILITATOR_SETTLE_LIMIT_PER_CLIENT: '100000' } });
try {
  console.log(`machine: ${machine()}; ${payments} payments of ${price} atomic units each; ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}`);
  const rows = [await exactRun(app), await batchRun(app)];
  console.log(['', '| scheme | payments | relayer transactions | relayer gas | payee received | calls/s | with settlement, payments/s |', '|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.scheme} | ${r.payments} | ${r.transactions} | ${r.gas} | ${r.paid} | ${(r.payments / r.seconds).toFixed(0)} | ${(r.payments / (r.seconds + r.settleSeconds)).toFixed(0)} |`)].join('\n'));
} finally {
  await app.close();
}

/** What the relayer keys have sent, and the gas those transactions used (receipts of every block the run mined). */
async function relayerTally(app: TestApp, fromBlock: bigint): Promise<{ transactions: number; gas: bigint }> {
  const client = app.ctx.chain.publicClient;
  const keys = new Set(app.ctx.chain.relayers.map((r) => r.address.toLowerCase()));
  const latest = await client.getBlockNumber({ cacheTime: 0 });
  let transactions = 0;
  let gas = 0n;
  for (let n = fromBlock + 1n; n <= latest; n++) {
    const block = await client.getBlock({ blockNumber: n, includeTransactions: true });
    for (const tx of block.transactions) {
      if (!keys.has(tx.from.toLowerCase())) continue;
      transactions += 1;
      gas += (await client.getTransactionReceipt({ hash: tx.hash })).gasUsed;
    }
  }
  return { transactions, gas };
}

async function exactRun(app: TestApp): Promise<Row> {
  const payTo = randomAddress();
  const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: app.urls.facilitator })).register(NETWORK, new ExactEvmServerScheme());
  const server = express();
  const accepts = { scheme: 'exact', network: NETWORK, payTo, price: { amount: price, asset: app.ctx.chain.asset.address, extra: { name: 'Global Dollar', version: '1' } } };
  server.use(paymentMiddleware({ 'GET /call': { accepts, description: 'one call' } } as never, resourceServer));
  server.get('/call', (_req, res) => void res.json({ ok: true }));
  const listener: Server = await new Promise((resolve) => {
    const s = server.listen(0, '127.0.0.1', () => resolve(s));
  });
  try {
    const url = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/call`;
    const payer = await fundedPayer(app, String((payments * Number(price)) / 1e6 + 1));
    const client = x402Client.fromConfig({
      schemes: [{ network: NETWORK, client: new ExactEvmScheme(payer) }],
      spendControls: { allowedAssets: [{ network: NETWORK, asset: app.ctx.chain.asset.address, maxAmountPerPayment: price }] },
    });
    const pay = wrapFetchWithPayment(fetch, new x402HTTPClient(client));
    const fromBlock = await app.ctx.chain.publicClient.getBlockNumber({ cacheTime: 0 });
    const started = performance.now();
    for (let i = 0; i < payments; i++) {
      const res = await pay(url);
      if (res.status !== 200) throw new Error(`exact call ${i}: ${res.status}`);
      await res.arrayBuffer();
    }
    const seconds = (performance.now() - started) / 1000;
    const tally = await relayerTally(app, fromBlock);
    return { scheme: 'exact (EIP-3009), one settle per call', payments, ...tally, paid: await app.ctx.chain.devchain!.balanceOf(payTo as Address), seconds, settleSeconds: 0 };
  } finally {
    await new Promise((r) => listener.close(() => r(undefined)));
  }
}

async function batchRun(app: TestApp): Promise<Row> {
  // The seller announces a deposit covering the whole run, so the client deposits once (the SDK's default is 10 calls' worth).
  const seller = await startBatchSeller(app, price, String(payments * Number(price)));
  try {
    const payer = await fundedPayer(app, String((payments * Number(price)) / 1e6 + 1));
    // The client deposits at most 5 × its per-payment cap: one deposit covers every call.
    const buyer = batchBuyer(app, payer, String(Math.ceil((payments * Number(price)) / 5)));
    const fromBlock = await app.ctx.chain.publicClient.getBlockNumber({ cacheTime: 0 });
    const started = performance.now();
    for (let i = 0; i < payments; i++) {
      const res = await buyer.pay(`${seller.url}/call`);
      if (res.status !== 200) throw new Error(`batch-settlement call ${i}: ${res.status}`);
      await res.arrayBuffer();
    }
    const seconds = (performance.now() - started) / 1000;
    const settling = performance.now();
    await seller.scheme.createChannelManager(seller.facilitator, NETWORK, app.ctx.chain.asset.address).claimAndSettle();
    const settleSeconds = (performance.now() - settling) / 1000;
    const tally = await relayerTally(app, fromBlock);
    return { scheme: 'batch-settlement: one deposit, vouchers, one claim, one sweep', payments, ...tally, paid: await app.ctx.chain.devchain!.balanceOf(seller.payTo), seconds, settleSeconds };
  } finally {
    await seller.close();
  }
}
