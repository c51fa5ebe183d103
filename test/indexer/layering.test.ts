import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// STYLE.md: a lower layer (platform/, chain/, x402/) never imports modules/. The chain indexer hands
// what it finds to a sink (IndexerSink) that the txapi module implements over its own tables.
const root = path.resolve(import.meta.dirname, '../../src');
const LOWER = ['platform', 'chain', 'x402'];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s+['"]([^'"]+)['"]/g), ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)].map(
    (m) => m[1],
  );
}

describe('layering', () => {
  it('no file under src/platform, src/chain or src/x402 imports src/modules', () => {
    const offenders: string[] = [];
    for (const layer of LOWER) {
      for (const file of sourceFiles(path.join(root, layer))) {
        const rel = path.relative(root, file).split(path.sep).join('/');
        for (const spec of importsOf(file)) {
          if (!spec.startsWith('.')) continue;
          const target = path.relative(root, path.resolve(path.dirname(file), spec)).split(path.sep).join('/');
          if (target.startsWith('modules/')) offenders.push(`${rel} -> ${spec}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });

  it('the scan sees the chain indexer files (it would catch an import there)', () => {
    const files = sourceFiles(path.join(root, 'chain/indexer')).map((f) => path.basename(f));
    expect(files).toEqual(expect.arrayContaining(['indexer.ts', 'sink.ts']));
    expect(importsOf(path.join(root, 'chain/indexer/indexer.ts')).length).toBeGreaterThan(0);
  });
});
