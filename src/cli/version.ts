// `tollgate --version`: the package's version and the build's commit. Reads package.json and asks git, nothing more.
import { execFileSync } from 'node:child_process';

/** `tollgate <version> (<commit>)`: the package's version, and the build's commit when it is known (BUILD_COMMIT, git). */
export async function versionLine(): Promise<string> {
  const [fs, { projectPath, PROJECT_ROOT }] = await Promise.all([import('node:fs'), import('../platform/project-root.js')]);
  const pkg = JSON.parse(fs.readFileSync(projectPath('package.json'), 'utf8')) as { version: string };
  const commit = process.env.BUILD_COMMIT ?? gitCommit(PROJECT_ROOT);
  return `tollgate ${pkg.version}${commit ? ` (${commit.slice(0, 12)})` : ''}`;
}

function gitCommit(cwd: string): string | null {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd, stdio: ['ignore', 'pipe', 'ignore'], timeout: 1_000 }).toString().trim() || null;
  } catch {
    return null;
  }
}
