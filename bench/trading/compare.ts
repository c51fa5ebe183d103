// bench/trading before and after a change, side by side: each commit in BENCH_COMMITS (default 0f19e29, the
// last float book, and HEAD) is checked out as a detached worktree under the temp dir, and its own
// bench/trading/run.ts runs two rounds there (each a tick with one worker and one with two), BENCH_ROUNDS
// times, the order rotating every round. The figure is the second round's one-worker tick: the first tick of a
// fresh process also pays for compiling the code. Prints each run's figures and per-commit medians and spreads. BENCH_KIND passes through (quant_signal by default, or llm_agent). Run: npx tsx bench/trading/compare.ts
import { spawn } from 'node:child_process';
import { commitTrees, machine, median } from '../lib.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const { trees, remove } = commitTrees((process.env.BENCH_COMMITS ?? '0f19e29,HEAD').split(','));
try {
  console.log(`machine: ${machine()}; ${process.env.BENCH_KIND ?? 'quant_signal'}; ${rounds} rounds`);
  const drains = new Map(trees.map((t) => [t.name, [] as number[]]));
  for (let round = 0; round < rounds; round += 1) {
    for (const tree of trees.map((_, i) => trees[(i + round) % trees.length]!)) {
      const out = await runRound(tree.dir);
      const one = /round 2, 1 worker\(s\): fire (\d+) ms, drain (\d+) ms \((\d+) executions\/s/.exec(out);
      const once = /(\d+) executions \((\d+) failed or skipped\), each tick exactly once/.exec(out);
      if (!one || !once) throw new Error(`no figures in the run of ${tree.name}:\n${out}`);
      drains.get(tree.name)!.push(Number(one[2]));
      console.log(`round ${round + 1} ${tree.name} (${tree.sha}): warm tick, 1 worker: fire ${one[1]} ms, drain ${one[2]} ms (${one[3]} executions/s); ${once[1]} executions, ${once[2]} failed or skipped, exactly once`);
    }
  }
  for (const t of trees) {
    const values = drains.get(t.name)!;
    console.log(`${t.name} (${t.sha}): one-worker drain median ${median(values)} ms (${Math.min(...values)}–${Math.max(...values)})`);
  }
} finally {
  remove();
}

function runRound(tree: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/trading/run.ts'], { cwd: tree, env: { ...process.env, BENCH_ROUNDS: '2' }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`bench/trading/run.ts in ${tree} exited ${code}: ${out}`))));
  });
}
