// Verify (and one-key settle) throughput before and after a change, side by side: each commit in BENCH_COMMITS
// (default: b3e3b6f, the commit before the relayer pool, and HEAD) is checked out as a detached git worktree
// under the temp dir, and compare-round.ts runs against each in turn, BENCH_ROUNDS times (the order rotates
// every round). Prints per-commit medians and spreads. Run: npx tsx bench/facilitator/compare.ts
import os from 'node:os';
import { commitTrees, machine, median, runTreeRound } from '../lib.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const { trees, remove } = commitTrees((process.env.BENCH_COMMITS ?? 'b3e3b6f,78e47a5^,HEAD').split(','));
try {
  console.log(`machine: ${machine()}; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}; ${rounds} rounds`);
  const results = new Map<string, { http: number[]; direct: number[]; settle: number[] }>(trees.map((t) => [t.name, { http: [], direct: [], settle: [] }]));
  for (let round = 0; round < rounds; round += 1) {
    const order = trees.map((_, i) => trees[(i + round) % trees.length]);
    for (const tree of order) {
      const line = await runTreeRound('bench/facilitator/compare-round.ts', tree.dir);
      type Rate = { perSecond: number; ok: number };
      const parsed = JSON.parse(line) as { http: Rate; direct: Rate; settle: Rate };
      results.get(tree.name)!.http.push(parsed.http.perSecond);
      results.get(tree.name)!.direct.push(parsed.direct.perSecond);
      results.get(tree.name)!.settle.push(parsed.settle.perSecond);
      console.log(
        `round ${round + 1} ${tree.name} (${tree.sha}): verify over HTTP ${parsed.http.perSecond.toFixed(0)}/s (${parsed.http.ok} ok), direct ${parsed.direct.perSecond.toFixed(0)}/s (${parsed.direct.ok} ok); settle direct ${parsed.settle.perSecond.toFixed(0)}/s (${parsed.settle.ok} ok); load ${os.loadavg()[0].toFixed(2)}`,
      );
    }
  }
  console.log(['', '| commit | verify over HTTP (rounds) | median | verify direct (rounds) | median | settle direct, 1 key (rounds) | median |', '|---|---|---|---|---|---|---|',
    ...trees.map((t) => {
      const r = results.get(t.name)!;
      const fmt = (v: number[]) => v.map((x) => x.toFixed(0)).join(' / ');
      return `| ${t.name} (${t.sha}) | ${fmt(r.http)} | **${median(r.http).toFixed(0)}** | ${fmt(r.direct)} | **${median(r.direct).toFixed(0)}** | ${fmt(r.settle)} | **${median(r.settle).toFixed(0)}** |`;
    })].join('\n'));
} finally {
  remove();
}
