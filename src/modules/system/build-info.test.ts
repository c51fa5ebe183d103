import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import { readBuildInfo } from './build-info.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-build-info-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
const config = loadConfig({ TOLLGATE_DATA_DIR: root });

/** A repository with one commit on `branch`, checked out detached when asked. */
function repository(name: string, branch: string, detached = false): string {
  const dir = path.join(root, name);
  fs.mkdirSync(dir);
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, env: { ...process.env, GIT_COMMITTER_DATE: '2026-01-02T03:04:05Z', GIT_AUTHOR_DATE: '2026-01-02T03:04:05Z' } }).toString().trim();
  git('init', '-q', '-b', branch);
  git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '--allow-empty', '-m', 'one');
  if (detached) git('checkout', '-q', '--detach');
  return dir;
}

describe('readBuildInfo', () => {
  it('reads the commit, its time and the branch from git, as rev-parse and log name them', () => {
    const dir = repository('on-branch', 'release/1.2');
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: dir }).toString().trim();
    expect(readBuildInfo(config, dir)).toEqual({ commit, branch: 'release/1.2', buildTime: '2026-01-02T03:04:05+00:00' });
  });

  it('names a detached HEAD `HEAD`, and a directory without git `unknown`', () => {
    expect(readBuildInfo(config, repository('detached', 'main', true)).branch).toBe('HEAD');
    const bare = path.join(root, 'no-git');
    fs.mkdirSync(bare);
    expect(readBuildInfo(config, bare)).toEqual({ commit: 'unknown', branch: 'unknown', buildTime: 'unknown' });
  });

  it('lets the BUILD_* variables win', () => {
    const built = loadConfig({ TOLLGATE_DATA_DIR: root, BUILD_COMMIT: 'abc', BUILD_BRANCH: 'main', BUILD_TIME: '2026-11-29T00:00:00Z' });
    expect(readBuildInfo(built, path.join(root, 'no-git'))).toEqual({ commit: 'abc', branch: 'main', buildTime: '2026-11-29T00:00:00Z' });
  });
});
