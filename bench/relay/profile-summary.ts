// Summarizes a V8 .cpuprofile written by `BENCH_PROFILE=dir npx tsx bench/relay/run.ts`: self time by package
// and by function, and inclusive time of named functions, in µs per operation.
// Run: npx tsx bench/relay/profile-summary.ts <file.cpuprofile> <operations> [function names, inclusive]…
import { readFileSync } from 'node:fs';

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
const [file, opsText, ...named] = process.argv.slice(2);
if (!file || !opsText) throw new Error('usage: profile-summary.ts <file.cpuprofile> <operations> [function names]…');
const ops = Number(opsText);
const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

/** node_modules/<package> (scoped too), our own src/… file, or node's internals. */
const packageOf = (url: string) => {
  const m = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (m) return m[1]!;
  if (url.includes('/work/main/')) return url.replace(/^.*\/work\/main\//, '');
  return url ? url.replace(/^node:/, 'node:') : '(native / vm)';
};
const label = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${packageOf(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

const selfByPackage = new Map<string, number>();
const selfByFunction = new Map<string, number>();
const inclusive = new Map<string, number>(named.map((name) => [name, 0]));
let total = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  const leaf = byId.get(id)!;
  total += dt;
  const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + dt);
  add(selfByPackage, packageOf(leaf.callFrame.url) || leaf.callFrame.functionName);
  add(selfByFunction, label(leaf));
  if (named.length === 0) return;
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const name = byId.get(at)!.callFrame.functionName;
    if (inclusive.has(name) && !seen.has(name)) {
      seen.add(name);
      add(inclusive, name);
    }
  }
});
const perOp = (us: number) => (us / ops).toFixed(1).padStart(7);
const top = (map: Map<string, number>, n: number) => [...map].sort((a, b) => b[1] - a[1]).slice(0, n);
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled, ${ops} operations: ${perOp(total)} µs/op`);
console.log('\nself time by package (µs/op)');
for (const [k, v] of top(selfByPackage, 25)) console.log(`${perOp(v)}  ${k}`);
console.log('\nself time by function (µs/op)');
for (const [k, v] of top(selfByFunction, 40)) console.log(`${perOp(v)}  ${k}`);
if (named.length) {
  console.log('\ninclusive (µs/op)');
  for (const [k, v] of inclusive) console.log(`${perOp(v)}  ${k}`);
}
