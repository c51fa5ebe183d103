import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // As tsconfig's `paths`: in the repository @tollgate/client is its source, so no build is needed to test it.
  resolve: { alias: { '@tollgate/client': fileURLToPath(new URL('packages/client/src/index.ts', import.meta.url)) } },
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'templates/*/src/**/*.test.ts', 'templates/*/test/**/*.test.ts'],
    pool: 'forks',
    // vitest's default is one fork fewer than the cores, so one on CI's 2 cores; most files wait on a
    // devchain, a database or a browser, and two forks take a PostgreSQL pass from 693 s to 417 s.
    maxWorkers: 2,
    globalSetup: ['test/build-once.ts'],
    testTimeout: 60_000,
    // The suite's spawned instances share a PostgreSQL server with dev keys by design (see ALLOW_DEV_KEYS).
    env: { ALLOW_DEV_KEYS: '1' },
    hookTimeout: 120_000,
    // Tests build their own databases and devchains; their logs would drown the summary.
    silent: 'passed-only',
  },
});
