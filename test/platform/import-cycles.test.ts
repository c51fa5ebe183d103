import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ALLOWED_CYCLES, cycles, describeCycle, importCycleProblems, importGraph, relativeSpecifiers } from '../../scripts/check-import-cycles.mjs';

// Issue 49: no import circles under src/ (STYLE.md: move the shared type down, don't import back up).
describe('import cycles', () => {
  it('src/ has none but the pending ones in ALLOWED_CYCLES', () => {
    expect(importCycleProblems()).toEqual([]);
  });

  it('web/src has none', () => {
    expect(importCycleProblems(fileURLToPath(new URL('../../web/src', import.meta.url)), [])).toEqual([]);
  });

  it('the scan reads every kind of relative import, and only real ones', () => {
    const text = [
      "import { a } from './a.js';",
      "import type { B } from '../b.js';",
      'import {',
      '  c,',
      "} from './c.js';",
      "export { d } from './d.js';",
      "export * from './e.js';",
      "import './f.js';",
      "const g = await import('./g.js');",
      "import { z } from 'zod';",
      "// import { h } from './commented.js';",
      " * import('./in-a-doc-comment.js')",
      "export const message = 'not from ./x.js';",
    ].join('\n');
    expect(relativeSpecifiers(text)).toEqual(['./a.js', '../b.js', './c.js', './d.js', './e.js', './f.js', './g.js']);
  });

  it('finds a circle, names its path, and allows only an exact match', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts', 'd.ts']],
      ['d.ts', []],
      ['self.ts', ['self.ts']],
    ]);
    expect(cycles(graph)).toEqual([['a.ts', 'b.ts', 'c.ts'], ['self.ts']]);
    expect(describeCycle(graph, ['a.ts', 'b.ts', 'c.ts'])).toBe('a.ts -> b.ts -> c.ts -> a.ts');
  });

  it('the real tree is scanned (an import in src/ is seen) and each allowed circle is still there', () => {
    const graph = importGraph();
    expect(graph.get('modules/intents/pay.ts')?.length).toBeGreaterThan(0);
    expect(graph.has('modules/intents/views.test.ts')).toBe(false);
    const found = cycles(graph).map((component) => component.join(' '));
    for (const allowed of ALLOWED_CYCLES) expect(found).toContain([...allowed].sort().join(' '));
  });
});
