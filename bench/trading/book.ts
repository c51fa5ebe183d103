// What exact money costs: the paper book's fill and mark (applyFill + markToMarket, what every filled tick
// runs) in JavaScript numbers as of BENCH_BEFORE (default 0f19e29, the last float book) against decimal text
// now, side by side in one process: each round runs both (the order swapping), BENCH_FILLS fills each.
// Prints per-side medians and spreads, and checks where each book's cash ends (floats drift, decimals do not).
// Run: npx tsx bench/trading/book.ts
import path from 'node:path';
import { commitTrees, machine, median, repo } from '../lib.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 7);
const fills = Number(process.env.BENCH_FILLS ?? 100_000);
const {
  trees: [before],
  remove,
} = commitTrees([process.env.BENCH_BEFORE ?? '0f19e29']);

interface BookModule {
  openBook(fund: number): unknown;
  applyFill(book: unknown, fill: { symbol: string; side: 'buy' | 'sell'; size: number | string; price: number | string; feeUsd: number | string }): unknown;
  markToMarket(book: unknown, prices: Record<string, number>): { equityUsd: unknown };
}

try {
  const sides: Array<{ name: string; book: BookModule; asText: boolean }> = [
    { name: `float (${before!.sha})`, book: (await import(path.join(before!.dir, 'src/modules/trading/book.ts'))) as BookModule, asText: false },
    { name: 'decimal (now)', book: (await import(path.join(repo, 'src/modules/trading/engine/book.ts'))) as BookModule, asText: true },
  ];
  console.log(`machine: ${machine()}; ${rounds} rounds of ${fills} fills per side`);
  const perFillUs = new Map(sides.map((s) => [s.name, [] as number[]]));
  for (let round = 0; round < rounds; round += 1) {
    for (const side of round % 2 ? [...sides].reverse() : sides) {
      const { us, cash } = run(side.book, side.asText);
      perFillUs.get(side.name)!.push(us);
      console.log(`round ${round + 1} ${side.name}: ${us.toFixed(2)} µs per fill and mark; cash after ${fills} fills ${cash}`);
    }
  }
  for (const side of sides) {
    const values = perFillUs.get(side.name)!;
    console.log(`${side.name}: median ${median(values).toFixed(2)} µs per fill and mark (${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)})`);
  }
} finally {
  remove();
}

/** Round trips of 0.1 at prices that are not binary fractions, marked after each fill, as a tick does. */
function run(book: BookModule, asText: boolean): { us: number; cash: string } {
  let state = book.openBook(10_000);
  const start = process.hrtime.bigint();
  for (let i = 0; i < fills; i++) {
    const price = 100 + (i % 97) / 100;
    const fill = { symbol: 'BTC-USD', side: (i % 2 ? 'sell' : 'buy') as 'buy' | 'sell', size: asText ? '0.1' : 0.1, price: asText ? String(price) : price, feeUsd: asText ? '0.01' : 0.01 };
    state = book.applyFill(state, fill);
    book.markToMarket(state, { 'BTC-USD': price });
  }
  const us = Number(process.hrtime.bigint() - start) / 1000 / fills;
  return { us, cash: String((state as { cashUsd: unknown }).cashUsd) };
}
