// node scripts/check-import-cycles.mjs — fails, naming each one, if the files under src/ import each other in a
// circle (issue 49; STYLE.md: "a circle between two files means a type or constant sits in the wrong one, or a
// third file is missing"). test/platform/import-cycles.test.ts runs it, so `npm test` (and CI) does.
//
// Every relative specifier counts: `import`, `import type`, `export ... from` and `import('./x.js')`. Type-only
// imports are erased at run time, so they cannot cause an initialisation-order bug, but they are the case the
// style names (a type in the wrong file), and a checker that skipped them would let the circle back in through
// `import type`.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const SRC_ROOT = fileURLToPath(new URL('../src', import.meta.url));

// Circles that are known and pending, each as the sorted list of its files (relative to src/). An allowed circle
// must match exactly: a file joining it fails the check, and so does an entry no longer needed (remove it then).
export const ALLOWED_CYCLES = [];

/** Every .ts file under `dir`, tests aside, as paths relative to `root` with forward slashes. */
export function sourceFiles(root = SRC_ROOT, dir = root) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(root, full);
    if (!entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts') || entry.name.endsWith('.d.ts')) return [];
    return [path.relative(root, full).split(path.sep).join('/')];
  });
}

// A static import or re-export starts a line (so commented-out ones, behind `//` or ` * `, do not count) and runs to
// its `from '...'`, or is a bare `import '...'`; quotes and semicolons end the search so it cannot run into the
// next statement's string.
const STATIC = /^[ \t]*(?:import|export)\b[^;'"`]*?\bfrom\s*['"]([^'"]+)['"]|^[ \t]*import\s*['"]([^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The relative specifiers `text` imports or re-exports, in order of appearance, without duplicates. */
export function relativeSpecifiers(text) {
  const found = [];
  for (const match of text.matchAll(STATIC)) found.push(match[1] ?? match[2]);
  for (const line of text.split('\n')) {
    const trimmed = line.trimStart();
    if (trimmed.startsWith('//') || trimmed.startsWith('*')) continue;
    for (const match of line.matchAll(DYNAMIC)) found.push(match[1]);
  }
  return [...new Set(found.filter((spec) => spec.startsWith('.')))];
}

/** `spec` as imported from `from` (both relative to src/), `.js` read as the `.ts` that compiles to it. */
export function resolveSpecifier(from, spec) {
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
  return target.endsWith('.js') ? `${target.slice(0, -3)}.ts` : target;
}

/** file → the source files it imports (only those that exist under src/; JSON and the like are leaves). */
export function importGraph(root = SRC_ROOT) {
  const files = sourceFiles(root);
  const known = new Set(files);
  const graph = new Map();
  for (const file of files) {
    const text = readFileSync(path.join(root, file), 'utf8');
    const targets = relativeSpecifiers(text).map((spec) => resolveSpecifier(file, spec));
    graph.set(file, [...new Set(targets.filter((target) => known.has(target)))]);
  }
  return graph;
}

/** The strongly connected components of more than one file (or one file importing itself), each sorted. */
export function cycles(graph) {
  // Tarjan's algorithm, iterative so a deep import chain cannot overflow the stack.
  const index = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const found = [];
  let next = 0;
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work = [{ node: start, edge: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const edges = graph.get(frame.node) ?? [];
      if (frame.edge < edges.length) {
        const to = edges[frame.edge++];
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node), index.get(to)));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent), low.get(frame.node)));
      }
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.node);
      if (component.length > 1 || edges.includes(frame.node)) found.push(component.sort());
    }
  }
  return found.sort((a, b) => a[0].localeCompare(b[0]));
}

/** One import path around `component`, e.g. `a.ts -> b.ts -> a.ts`, so the message shows which imports to cut. */
export function describeCycle(graph, component) {
  const members = new Set(component);
  const start = component[0];
  // Breadth-first from start back to start, staying inside the component: the shortest circle through start.
  const previous = new Map();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const to of graph.get(node) ?? []) {
      if (!members.has(to)) continue;
      if (to === start) {
        const chain = [node];
        while (chain[0] !== start) chain.unshift(previous.get(chain[0]));
        const circle = [...chain, start].join(' -> ');
        return component.length > chain.length ? `${circle} (all of: ${component.join(', ')})` : circle;
      }
      if (!previous.has(to)) {
        previous.set(to, node);
        queue.push(to);
      }
    }
  }
  return component.join(', ');
}

/** The check: what is wrong, one line each (empty when the tree is clean). */
export function importCycleProblems(root = SRC_ROOT, allowed = ALLOWED_CYCLES) {
  const graph = importGraph(root);
  const found = cycles(graph);
  const key = (component) => [...component].sort().join(' ');
  const allowedKeys = new Set(allowed.map(key));
  const foundKeys = new Set(found.map(key));
  const problems = found.filter((component) => !allowedKeys.has(key(component))).map((component) => `import cycle: ${describeCycle(graph, component)}`);
  for (const component of allowed) {
    if (!foundKeys.has(key(component))) problems.push(`allowed import cycle no longer found, remove it from ALLOWED_CYCLES: ${component.join(', ')}`);
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const problems = importCycleProblems();
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) process.exit(1);
  console.log(`no import cycles in src/ (${ALLOWED_CYCLES.length} allowed, pending)`);
}
