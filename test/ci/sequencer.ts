import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// The order test files start in. CI runs from a clean clone, so vitest has no timings of its own and starts
// the largest files first; a small file that waits on a devchain or a restart (the crash points) then starts
// last and one worker idles while the other finishes it. Here files start longest first by the timings of a
// recorded run (test/ci/durations.json, written by scripts/test-durations.mjs from a `--reporter=json`
// report), files not recorded yet first of all (they may be slow), so the two workers end close together.
const durations: Record<string, number> = JSON.parse(readFileSync(new URL('./durations.json', import.meta.url), 'utf8'));

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seconds = (spec: TestSpecification) => durations[relative(this.ctx.config.root, spec.moduleId)] ?? Number.POSITIVE_INFINITY;
    return [...files].sort((a, b) => seconds(b) - seconds(a));
  }
}
