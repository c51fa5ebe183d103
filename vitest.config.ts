import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'templates/*/src/**/*.test.ts', 'templates/*/test/**/*.test.ts'],
    pool: 'forks',
    globalSetup: ['test/build-once.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Tests build their own databases and devchains; their logs would drown the summary.
    silent: 'passed-only',
  },
});
