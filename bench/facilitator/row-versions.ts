// Row versions written per settle in the settlement ledger, before and after a change, side by side: each commit
// in BENCH_COMMITS (default 7359eab, the ledger with its open index, and HEAD) is checked out as a detached
// worktree and row-versions-round.ts runs against each in turn, BENCH_ROUNDS times (order rotating). Reports,
// from pg_stat_user_tables, inserts, updates, HOT updates and deletes per settle for x402_settlements (and the
// open list, where the commit has one): medians over rounds. PostgreSQL only (PGlite keeps no table statistics).
// Run: DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/facilitator/row-versions.ts
// Env: BENCH_COMMITS, BENCH_ROUNDS (default 3), BENCH_SETTLE (settles per round, default 1000), BENCH_CONCURRENCY (64).
import os from 'node:os';
import { commitTrees, machine, median, runTreeRound } from '../lib.js';

interface TableStats {
  relname: string;
  ins: number;
  upd: number;
  hot: number;
  del: number;
}

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const { trees, remove } = commitTrees((process.env.BENCH_COMMITS ?? '7359eab,HEAD').split(','));
try {
  console.log(`machine: ${machine()}; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}; ${rounds} rounds`);
  // Per commit and table: each counter per settle, one value per round.
  const results = new Map<string, Map<string, Record<'ins' | 'upd' | 'hot' | 'del', number[]>>>(trees.map((t) => [t.name, new Map()]));
  for (let round = 0; round < rounds; round += 1) {
    for (const tree of trees.map((_, i) => trees[(i + round) % trees.length])) {
      const { settles, ok, tables } = JSON.parse(await runTreeRound('bench/facilitator/row-versions-round.ts', tree.dir)) as { settles: number; ok: number; tables: TableStats[] };
      for (const t of tables) {
        const perTable = results.get(tree.name)!;
        const row = perTable.get(t.relname) ?? { ins: [], upd: [], hot: [], del: [] };
        for (const k of ['ins', 'upd', 'hot', 'del'] as const) row[k].push(t[k] / settles);
        perTable.set(t.relname, row);
      }
      const main = tables.find((t) => t.relname === 'x402_settlements');
      console.log(`round ${round + 1} ${tree.name} (${tree.sha}): ${ok}/${settles} ok; x402_settlements ${main?.ins} ins, ${main?.upd} upd (${main?.hot} HOT), load ${os.loadavg()[0].toFixed(2)}`);
    }
  }
  const fmt = (v: number[]) => `**${median(v).toFixed(2)}** (${Math.min(...v).toFixed(2)}–${Math.max(...v).toFixed(2)})`;
  console.log(['', '| commit | table | inserts / settle | updates / settle | HOT updates / settle | HOT share | deletes / settle |', '|---|---|---|---|---|---|---|',
    ...trees.flatMap((t) => [...results.get(t.name)!.entries()].map(([table, r]) => {
      const share = r.upd.map((u, i) => (u ? r.hot[i]! / u : 0));
      return `| ${t.name} (${t.sha}) | ${table} | ${fmt(r.ins)} | ${fmt(r.upd)} | ${fmt(r.hot)} | ${(median(share) * 100).toFixed(0)} % | ${fmt(r.del)} |`;
    }))].join('\n'));
} finally {
  remove();
}
