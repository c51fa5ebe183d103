// The committed artifact must be exactly what `npm run contracts:build` produces from the source,
// and the typed ABI in src/chain/usdg-artifact.ts must describe the same interface.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compileUsdg, USDG_ARTIFACT_PATH, USDG_SOURCE_PATH } from '../../scripts/compile-contracts.mjs';
import { usdgAbi, usdgArtifact, usdgDeployedBytecode } from '../../src/chain/usdg-artifact.js';

// Contracts on a devchain, no database: the PostgreSQL pass would run them again unchanged.
const noDatabaseTestOnPostgresPass = Boolean(process.env.DATABASE_URL);

interface AbiParam {
  name?: string;
  type: string;
  indexed?: boolean;
}
interface AbiEntry {
  type: string;
  name?: string;
  stateMutability?: string;
  inputs?: readonly AbiParam[];
  outputs?: readonly AbiParam[];
}

/** Comparable form: drops solc-only fields (internalType) and ordering differences. */
function normalize(abi: readonly AbiEntry[]): string[] {
  const params = (ps: readonly AbiParam[] | undefined) =>
    (ps ?? []).map((p) => ({ name: p.name ?? '', type: p.type, indexed: p.indexed ?? false }));
  return abi
    .map((e) =>
      JSON.stringify({ type: e.type, name: e.name, mut: e.stateMutability, in: params(e.inputs), out: params(e.outputs) }),
    )
    .sort();
}

describe.skipIf(noDatabaseTestOnPostgresPass)('USDG artifact', () => {
  const committed = JSON.parse(readFileSync(USDG_ARTIFACT_PATH, 'utf8')) as Record<string, unknown>;

  it('matches a fresh in-memory compile of contracts/USDG.sol', { timeout: 60_000 }, () => {
    const fresh = compileUsdg();
    expect(fresh.sourceHash).toBe(committed.sourceHash);
    expect(fresh.deployedBytecode).toBe(committed.deployedBytecode);
    expect(fresh.bytecode).toBe(committed.bytecode);
    expect(fresh.abi).toEqual(committed.abi);
    expect(fresh).toEqual(committed);
  });

  it('records the sha256 of the source bytes', () => {
    const digest = createHash('sha256').update(readFileSync(USDG_SOURCE_PATH)).digest('hex');
    expect(committed.sourceHash).toBe(digest);
  });

  it('is what src/chain/usdg-artifact.ts exports', () => {
    expect(usdgDeployedBytecode).toBe(committed.deployedBytecode);
    expect(usdgDeployedBytecode).toMatch(/^0x[0-9a-f]{200,}$/);
    expect(normalize(usdgAbi)).toEqual(normalize(usdgArtifact.abi as readonly AbiEntry[]));
  });
});
