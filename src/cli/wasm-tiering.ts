import { setFlagsFromString } from 'node:v8';

/**
 * For a command that runs the embedded database (PGlite, WebAssembly) for a few seconds and exits: migrate,
 * restore, an operator command with no instance serving. V8 starts every WebAssembly function on its baseline
 * compiler and re-compiles the ones that run hot with its optimising one, on background threads; PGlite's open
 * and first statements make thousands of them hot, about 3 s of CPU on this project's 2-core machines, and Node
 * waits for those compilations whenever its event loop is briefly empty. A one-shot command is over before the
 * optimised code would pay back. The largest tiering budget defers the optimising compiler to functions that
 * run for billions of steps, so long work (a large restore or import) still gets it. `serve` keeps V8's
 * default: there the optimised code pays back (a heavy query runs in half the time), unless
 * PGLITE_WASM_TIERING=deferred says it lives seconds (the test suite's instances). Figures: bench/RESULTS.md,
 * "One-shot commands on the embedded database".
 */
export function deferWasmOptimisation(): void {
  setFlagsFromString(`--wasm-tiering-budget=${2 ** 31 - 1}`);
}
