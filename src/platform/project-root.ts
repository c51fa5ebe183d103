// Files the service reads from its checkout or image (migrations, contracts, web/dist, the agent runtime), found
// from the project's root: the nearest directory above this module whose package.json is Tollgate's. The same
// lookup then works from src/ (tsx, vitest) and from dist/, where the build bundles modules into chunks that sit
// at other depths than their sources.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  const start = dirname(fileURLToPath(import.meta.url));
  for (let dir = start; ; ) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'tollgate') return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`Tollgate's package.json was not found in any directory above ${start}`);
    dir = parent;
  }
}

export const PROJECT_ROOT = findRoot();

/** A path under the project's root. */
export const projectPath = (...parts: string[]): string => join(PROJECT_ROOT, ...parts);
