// Writes test/ci/durations.json (seconds per test file) from vitest's JSON report, for test/ci/sequencer.ts:
//   npx vitest run --reporter=json --outputFile.json=/tmp/report.json && node scripts/test-durations.mjs /tmp/report.json
// Give both passes' reports (PGlite, PostgreSQL): a file keeps its longer time, so a file slow on one database only
// (the cluster file is skipped on PGlite and runs 80 s on PostgreSQL) still starts early.
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';

const reports = process.argv.slice(2);
if (reports.length === 0) throw new Error('usage: node scripts/test-durations.mjs <report.json> [<report.json>]');
const longest = new Map();
for (const path of reports) {
  for (const file of JSON.parse(readFileSync(path, 'utf8')).testResults) {
    const name = relative(process.cwd(), file.name);
    longest.set(name, Math.max(longest.get(name) ?? 0, (file.endTime - file.startTime) / 1000));
  }
}
const durations = Object.fromEntries(
  [...longest].map(([name, seconds]) => [name, Math.round(seconds * 10) / 10]).sort(([a], [b]) => (a < b ? -1 : 1)),
);
writeFileSync(new URL('../test/ci/durations.json', import.meta.url), JSON.stringify(durations, null, 1) + '\n');
console.log(`test/ci/durations.json: ${Object.keys(durations).length} files`);
