// The hosted checkout's first load: the JavaScript it needs (gzipped, against the 30 KB budget) and how
// long Chromium takes from navigation to the intent shown (merchant, amount, status), cold (a new browser
// context: nothing cached) and warm (the same context again: hashed assets from cache), side by side
// in alternating order for several rounds. The service runs here on PGlite with the devchain.
// Run: npx tsx bench/web/run.ts   (BENCH_ROUNDS 10)
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { machine } from '../lib.js';
import { startBenchServer } from '../bench-server.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 10);
/** Issue 32's budget for the checkout's first load (test/web/checkout-anyone.test.ts fails above it too). */
const BUDGET_KB = 30;
const server = await startBenchServer('web');
const api = server.urls.api;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const spread = (values: number[]) => `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}`;

async function call(path: string, token: string, body: unknown) {
  const response = await fetch(`${api}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as any;
}

const identity = await server.ctx.devIdentity!.sign('bench-merchant', 3600);
const { project, apiKey } = (await call('/v1/projects', identity, { name: 'bench' })).data;
const merchant = (await call(`/v1/projects/${project.id}/merchants`, identity, { name: 'Bench store', payTo: '0x00000000000000000000000000000000000b3c01' })).data;
const intent = await call('/v1/payment-intents', apiKey.secret, { merchantId: merchant.id, amountUsdCents: 1999, externalId: 'bench-1' });

// What the checkout's HTML loads: its module script, the preloaded chunks, the stylesheet.
const html = await (await fetch(intent.paymentUrl, { headers: { accept: 'text/html' } })).text();
const files = [...html.matchAll(/(?:src|href)="(\/app\/assets\/[^"]+)"/g)].map((m) => m[1]!);
let jsGzip = 0;
let cssGzip = 0;
for (const file of files) {
  const bytes = gzipSync(Buffer.from(await (await fetch(`${api}${file}`)).arrayBuffer()), { level: 9 }).length;
  if (file.endsWith('.js')) jsGzip += bytes;
  else cssGzip += bytes;
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const cold: number[] = [];
const warm: number[] = [];
try {
  for (let round = 0; round < rounds; round++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    const load = async () => {
      const started = performance.now();
      await page.goto(intent.paymentUrl);
      await page.getByTestId('status').waitFor();
      return performance.now() - started;
    };
    cold.push(await load());
    warm.push(await load());
    await context.close();
  }
} finally {
  await browser.close();
}

console.log(`machine: ${machine()}, Chromium ${browser.version()}`);
console.log(`checkout first load: ${files.length} files; JavaScript ${(jsGzip / 1024).toFixed(1)} KB gzipped (budget ${BUDGET_KB} KB) ${jsGzip <= BUDGET_KB * 1024 ? 'PASS' : 'MISS'}; CSS ${(cssGzip / 1024).toFixed(1)} KB gzipped`);
console.log(`navigation → intent shown, ${rounds} rounds: cold median ${median(cold).toFixed(0)} ms (${spread(cold)}), warm median ${median(warm).toFixed(0)} ms (${spread(warm)})`);
process.kill(process.pid, 'SIGTERM');
