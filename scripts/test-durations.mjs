// Writes test/ci/durations.json (seconds per test file) from vitest's JSON report, for test/ci/sequencer.ts:
//   npx vitest run --reporter=json --outputFile.json=/tmp/report.json && node scripts/test-durations.mjs /tmp/report.json
// A second report (the other database's pass) is averaged in when given.
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';

const reports = process.argv.slice(2);
if (reports.length === 0) throw new Error('usage: node scripts/test-durations.mjs <report.json> [<report.json>]');
const sums = new Map();
for (const path of reports) {
  for (const file of JSON.parse(readFileSync(path, 'utf8')).testResults) {
    const name = relative(process.cwd(), file.name);
    sums.set(name, [...(sums.get(name) ?? []), (file.endTime - file.startTime) / 1000]);
  }
}
const durations = Object.fromEntries(
  [...sums].map(([name, times]) => [name, Math.round((times.reduce((a, b) => a + b, 0) / times.length) * 10) / 10]).sort(([a], [b]) => (a < b ? -1 : 1)),
);
writeFileSync(new URL('../test/ci/durations.json', import.meta.url), JSON.stringify(durations, null, 1) + '\n');
console.log(`test/ci/durations.json: ${Object.keys(durations).length} files`);
