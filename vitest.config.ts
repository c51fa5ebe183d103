import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/ci/sequencer.js';

export default defineConfig({
  // As tsconfig's `paths`: in the repository @tollgate/client is its source, so no build is needed to test it.
  resolve: { alias: { '@tollgate/client': fileURLToPath(new URL('packages/client/src/index.ts', import.meta.url)) } },
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'templates/*/src/**/*.test.ts', 'templates/*/test/**/*.test.ts'],
    pool: 'forks',
    // vitest's default is one fork fewer than the cores, so one on CI's 2 cores; most files wait on a
    // devchain, a database or a browser, and two forks take a PostgreSQL pass from 693 s to 417 s.
    maxWorkers: 2,
    // A worker runs its files one after another in one process, importing the service (viem, fastify,
    // PGlite's WASM...) once instead of once per file: test/intents + test/projects went from 134 s to 77 s.
    // The price: a shared module's top level runs once per worker, so helpers register no hooks at module
    // scope (they export a function the test file calls, as test/crash/harness.ts does), and no file may
    // leave process-wide state behind (env, listeners, timers).
    isolate: false,
    globalSetup: ['test/build-once.ts'],
    // Longest files first, by a recorded run's timings, so both workers finish together (test/ci/sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
    testTimeout: 60_000,
    // expect.poll's own default (1 s) is a wait, not a bound: on CI's two loaded cores a page's answer to a click
    // took longer (test/web/dashboard-actions failed so on PostgreSQL). A poll that passes still ends at once.
    expect: { poll: { timeout: 10_000 } },
    // The suite's spawned instances share a PostgreSQL server with dev keys by design (see ALLOW_DEV_KEYS), and
    // live seconds: PGlite's optimising compile (~3 s of CPU a start) would never pay back (PGLITE_WASM_TIERING).
    env: { ALLOW_DEV_KEYS: '1', PGLITE_WASM_TIERING: 'deferred' },
    hookTimeout: 120_000,
    // Tests build their own databases and devchains; their logs would drown the summary.
    silent: 'passed-only',
  },
});
