import { execFileSync } from 'node:child_process';
import type { Config } from '../../config.js';
import type { BuildInfo } from '../../context.js';

/** Build facts for /health: the BUILD_* variables win, else git at start, else `unknown`. */
export function readBuildInfo(config: Config, cwd = process.cwd()): BuildInfo {
  const git = (...args: string[]) => {
    try {
      return execFileSync('git', args, { cwd, stdio: ['ignore', 'pipe', 'ignore'], timeout: 2000 }).toString().trim() || null;
    } catch {
      return null;
    }
  };
  return {
    commit: config.build.commit ?? git('rev-parse', 'HEAD') ?? 'unknown',
    branch: config.build.branch ?? git('rev-parse', '--abbrev-ref', 'HEAD') ?? 'unknown',
    buildTime: config.build.time ?? git('log', '-1', '--format=%cI') ?? 'unknown',
  };
}
