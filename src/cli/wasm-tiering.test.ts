import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

// A WebAssembly function that loops n times (a sum), run hot; then V8's own word on which compiler's code it runs.
const script = (defer: boolean) => `
  import { deferWasmOptimisation } from './src/cli/wasm-tiering.ts';
  if (${defer}) deferWasmOptimisation();
  const code = [0x02,0x40,0x03,0x40,0x20,0x00,0x45,0x0d,0x01,0x20,0x01,0x20,0x00,0x6a,0x21,0x01,0x20,0x00,0x41,0x01,0x6b,0x21,0x00,0x0c,0x00,0x0b,0x0b,0x20,0x01,0x0b];
  const body = [0x01, 0x01, 0x7f, ...code];
  const bytes = new Uint8Array([0x00,0x61,0x73,0x6d,0x01,0x00,0x00,0x00, 0x01,0x06,0x01,0x60,0x01,0x7f,0x01,0x7f, 0x03,0x02,0x01,0x00,
    0x07,0x05,0x01,0x01,0x66,0x00,0x00, 0x0a, body.length + 2, 0x01, body.length, ...body]);
  const { instance } = await WebAssembly.instantiate(bytes);
  const f = instance.exports.f;
  if (f(4) !== 10) throw new Error('the test module sums wrong');
  // Tier-up is compiled on a background thread: give it 3 s of turns of the event loop to land (a loaded machine).
  // At most 300 calls of 100,000 steps: well under the deferred budget, far over V8's default one.
  for (const end = Date.now() + 3000; Date.now() < end && !eval('%IsTurboFanFunction(f)'); ) { f(100000); await new Promise((r) => setTimeout(r, 10)); }
  console.log(eval('%IsTurboFanFunction(f)') ? 'optimised' : 'baseline');
`;

async function tierAfterHotLoop(defer: boolean): Promise<string> {
  const { stdout } = await run(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', script(defer)]);
  return stdout.trim();
}

// No database: V8's WebAssembly tiers (PGlite's engine). The PostgreSQL pass would run it again unchanged.
const noDatabaseTestOnPostgresPass = Boolean(process.env.DATABASE_URL);

describe.skipIf(noDatabaseTestOnPostgresPass)('deferWasmOptimisation', () => {
  it('keeps a hot WebAssembly function on the baseline compiler, where V8 would otherwise optimise it', async () => {
    const [deferred, usual] = await Promise.all([tierAfterHotLoop(true), tierAfterHotLoop(false)]);
    expect(usual).toBe('optimised');
    expect(deferred).toBe('baseline');
  }, 30_000);
});
