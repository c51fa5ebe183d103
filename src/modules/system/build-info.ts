import { execFileSync } from 'node:child_process';
import type { Config } from '../../config.js';
import type { BuildInfo } from '../../context.js';

/** What git says of the checkout in `cwd`, read once per process: a start (and every test app) spawned git three times. */
const checkouts = new Map<string, Partial<BuildInfo>>();

/** Build facts for /health: the BUILD_* variables win, else git at start, else `unknown`. */
export function readBuildInfo(config: Config, cwd = process.cwd()): BuildInfo {
  const { commit, branch, time } = config.build;
  const git = commit && branch && time ? {} : gitFacts(cwd);
  return { commit: commit ?? git.commit ?? 'unknown', branch: branch ?? git.branch ?? 'unknown', buildTime: time ?? git.buildTime ?? 'unknown' };
}

/** The commit, its time and the branch from one `git show`; a detached HEAD is `HEAD`, as `rev-parse --abbrev-ref` says. */
function gitFacts(cwd: string): Partial<BuildInfo> {
  let facts = checkouts.get(cwd);
  if (facts) return facts;
  try {
    const [commit, buildTime, refs = ''] = execFileSync('git', ['show', '-s', '--format=%H%n%cI%n%D', 'HEAD'], { cwd, stdio: ['ignore', 'pipe', 'ignore'], timeout: 2000 }).toString().split('\n');
    facts = { commit: commit || undefined, buildTime: buildTime || undefined, branch: /^HEAD -> ([^,]+)/.exec(refs)?.[1] ?? 'HEAD' };
  } catch {
    facts = {};
  }
  checkouts.set(cwd, facts);
  return facts;
}
