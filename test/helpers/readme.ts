// The README's walkthrough as a script: the sh block between the <!-- walkthrough --> markers, fences removed
// (test/readme/walkthrough.test.ts runs it on a fresh instance, test/platform/backup.test.ts on a restored one).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repositoryRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function walkthroughScript(): string {
  const readme = fs.readFileSync(path.join(repositoryRoot, 'README.md'), 'utf8');
  const block = readme.match(/<!-- walkthrough -->\n```sh\n([\s\S]*?)```\n<!-- \/walkthrough -->/);
  if (!block) throw new Error('README has no walkthrough block');
  return block[1]!;
}

/** What a passing walkthrough prints (its last lines). */
export const WALKTHROUGH_OUTPUT = [
  /upstream 200 \{"message":"paid pong"\}/,
  /^payment settled 100 units, transaction 0x[0-9a-f]{64}$/m,
  /^intent \S+ pending, pay at http:\/\/\S+\/pay$/m,
  /^payment settled, transaction 0x[0-9a-f]{64}$/m,
  /^intent \S+ settled$/m,
];
