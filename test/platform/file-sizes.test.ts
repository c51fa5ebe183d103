import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Issue 49: no room over 400 lines. A file that grows past it is split by the jobs it does (STYLE.md), so this
// names every source file over the limit rather than failing on the first.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LIMIT = 400;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(entry.name) && !/\.(test|d)\.tsx?$/.test(entry.name) ? [full] : [];
  });
}

function oversized(dirs: string[], limit = LIMIT): string[] {
  return dirs
    .flatMap((dir) => sourceFiles(dir))
    .map((file) => ({ file: path.relative(ROOT, file), lines: fs.readFileSync(file, 'utf8').split('\n').length - 1 }))
    .filter(({ lines }) => lines > limit)
    .map(({ file, lines }) => `${file}: ${lines} lines`);
}

describe('file sizes', () => {
  it(`no source file under src/ or web/src/ is over ${LIMIT} lines`, () => {
    expect(oversized([path.join(ROOT, 'src'), path.join(ROOT, 'web/src')])).toEqual([]);
  });

  it('the check sees a file over the limit', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'file-sizes-'));
    try {
      fs.writeFileSync(path.join(dir, 'big.ts'), 'x;\n'.repeat(11));
      fs.writeFileSync(path.join(dir, 'small.ts'), 'x;\n'.repeat(10));
      fs.writeFileSync(path.join(dir, 'big.test.ts'), 'x;\n'.repeat(50));
      expect(oversized([dir], 10)).toEqual([`${path.relative(ROOT, dir)}/big.ts: 11 lines`]);
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });
});
