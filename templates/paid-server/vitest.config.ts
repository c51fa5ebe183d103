import { defineConfig } from 'vitest/config';

// Used by `npm test` inside this folder; the repo's root config also runs these tests.
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
  },
});
