// The relayer pool: configuration, one nonce lane per key with settles spread over the lanes, gas for
// every key on the devchain, and relayerStatus. Evidence comes from the chain (who sent what, at
// which nonce), not from what the facilitator says.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { getAddress, parseEther, type Address, type Hash } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/platform/settings.js';
import { Facilitator } from '../../src/x402/facilitator/facilitator.js';
import { bumpFees } from '../../src/x402/facilitator/fees.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { balanceOf, fundedPayer, nonceOf, signAuthorization, transfersForNonce } from '../x402/support.js';
import { requirementsFor } from './support.js';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/tollgate.js');
const keys = () => Array.from({ length: 3 }, () => generatePrivateKey());

describe('relayer key configuration', () => {
  it('FACILITATOR_PRIVATE_KEYS is the pool; FACILITATOR_PRIVATE_KEY is a pool of one; none = dev keys', () => {
    const [a, b, c] = keys();
    expect(loadConfig({ FACILITATOR_PRIVATE_KEYS: ` ${a}, ${b},${c.slice(2)} ` }).facilitatorPrivateKeys).toEqual([a, b, c.slice(2)]);
    expect(loadConfig({ FACILITATOR_PRIVATE_KEY: a }).facilitatorPrivateKeys).toEqual([a]);
    expect(loadConfig({}).facilitatorPrivateKeys).toEqual([]);
    expect(loadConfig({}).facilitatorRelayerCount).toBe(1);
    expect(loadConfig({ FACILITATOR_RELAYER_COUNT: '4' }).facilitatorRelayerCount).toBe(4);
  });

  it('refuses both variables at once, a key listed twice, a malformed list, and dev-key counts beside real keys', () => {
    const [a, b] = keys();
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as ConfigError).problems.join('\n');
      }
      return expect.unreachable();
    };
    expect(problems({ FACILITATOR_PRIVATE_KEY: a, FACILITATOR_PRIVATE_KEYS: b })).toMatch(/FACILITATOR_PRIVATE_KEY and FACILITATOR_PRIVATE_KEYS are both set/);
    expect(problems({ FACILITATOR_PRIVATE_KEYS: `${a},${a.toUpperCase().replace('0X', '0x')}` })).toMatch(/FACILITATOR_PRIVATE_KEYS: lists a key twice/);
    expect(problems({ FACILITATOR_PRIVATE_KEYS: `${a},0x1234` })).toMatch(/FACILITATOR_PRIVATE_KEYS/);
    expect(problems({ FACILITATOR_PRIVATE_KEYS: a, FACILITATOR_RELAYER_COUNT: '2' })).toMatch(/FACILITATOR_RELAYER_COUNT/);
    expect(problems({ CHAIN_RPC_URL: 'http://127.0.0.1:1', FACILITATOR_RELAYER_COUNT: '2' })).toMatch(/FACILITATOR_RELAYER_COUNT/);
  });

  it('the CLI exits 2 naming both variables when both are set', () => {
    const [a, b] = keys();
    const result = spawnSync(process.execPath, [bin, 'serve'], {
      env: { ...process.env, FACILITATOR_PRIVATE_KEY: a, FACILITATOR_PRIVATE_KEYS: b, DATABASE_URL: '' },
      encoding: 'utf8',
      timeout: 90_000,
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('FACILITATOR_PRIVATE_KEY and FACILITATOR_PRIVATE_KEYS are both set');
  });

  it('replacement fees: at least +12.5 % on both fee fields, never below the market', () => {
    const old = { maxFeePerGas: 1_000n, maxPriorityFeePerGas: 100n };
    const low = bumpFees(old, { maxFeePerGas: 10n, maxPriorityFeePerGas: 1n }) as typeof old;
    expect(low.maxFeePerGas * 1000n).toBeGreaterThanOrEqual(1_125_000n);
    expect(low.maxPriorityFeePerGas * 1000n).toBeGreaterThanOrEqual(112_500n);
    expect(bumpFees(old, { maxFeePerGas: 50_000n, maxPriorityFeePerGas: 7_000n })).toEqual({ maxFeePerGas: 50_000n, maxPriorityFeePerGas: 7_000n });
    expect((bumpFees({ gasPrice: 999n }, { gasPrice: 1n }) as { gasPrice: bigint }).gasPrice * 1000n).toBeGreaterThanOrEqual(999n * 1125n);
  });
});

describe('a pool of four dev relayers', () => {
  let app: TestApp;
  beforeAll(async () => {
    // Unbatched: how single sends spread over lanes (batches per lane: batch.test.ts).
    app = await buildTestApp({ roles: ['facilitator'], env: { FACILITATOR_RELAYER_COUNT: '4', FACILITATOR_BATCH_MAX_CALLS: '1' } });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('exposes every key as a facilitator signer, each with gas', async () => {
    const signers = app.ctx.chain.facilitatorSigners();
    expect(signers).toHaveLength(4);
    expect(new Set(signers).size).toBe(4);
    expect(signers).toEqual(app.ctx.chain.relayers.map((r) => r.address));
    expect(signers[0]).toBe(app.ctx.chain.relayer!.address);
    for (const address of signers) expect(await app.ctx.chain.publicClient.getBalance({ address })).toBeGreaterThanOrEqual(parseEther('10'));
    const supported = app.ctx.facilitator!.supported();
    expect(Object.values(supported.signers).flat().map((a) => getAddress(a)).sort()).toEqual([...signers].sort());
  });

  it('spreads concurrent settles over the lanes; each payment moves once; each lane’s nonces are gapless', async () => {
    const facilitator = app.ctx.facilitator!;
    const client = app.ctx.chain.publicClient;
    const startBlock = await client.getBlockNumber();
    const before = await Promise.all(app.ctx.chain.facilitatorSigners().map((address) => client.getTransactionCount({ address })));
    const payers = await Promise.all(Array.from({ length: 8 }, () => fundedPayer(app, '1')));
    const requirements = requirementsFor(app);
    const payloads = await Promise.all(Array.from({ length: 48 }, (_, i) => signAuthorization(payers[i % payers.length], requirements)));

    const results = await Promise.all(payloads.map((p) => facilitator.settle(p, requirements)));
    expect(results.filter((r) => r.success)).toHaveLength(48);
    expect(await balanceOf(app, requirements.payTo as Address)).toBe(48n * 100n);
    for (const [i, p] of payloads.entries()) expect(await transfersForNonce(app, payers[i % payers.length].address, nonceOf(p))).toBe(1);

    // Who sent each settlement, at which nonce, read from the chain.
    const txs = await Promise.all(results.map((r) => client.getTransaction({ hash: r.transaction as Hash })));
    const byLane = new Map<Address, number[]>();
    for (const tx of txs) byLane.set(getAddress(tx.from), [...(byLane.get(getAddress(tx.from)) ?? []), tx.nonce]);
    expect(byLane.size).toBe(4);
    for (const [i, address] of app.ctx.chain.facilitatorSigners().entries()) {
      const nonces = (byLane.get(address) ?? []).sort((a, b) => a - b);
      expect(nonces.length).toBeGreaterThanOrEqual(4); // least-busy: no lane starves
      expect(nonces).toEqual(Array.from({ length: nonces.length }, (_, k) => before[i] + k));
      expect(await client.getTransactionCount({ address })).toBe(before[i] + nonces.length);
    }
    // Settles overlapped: the lanes' transactions interleave in block order (one lane after another would switch 3 times).
    const inOrder = [...txs].sort((a, b) => Number(a.blockNumber! - b.blockNumber!));
    expect(inOrder[0].blockNumber!).toBeGreaterThan(startBlock);
    const switches = inOrder.filter((tx, i) => i > 0 && tx.from !== inOrder[i - 1].from).length;
    expect(switches).toBeGreaterThanOrEqual(12);
  });

  it('relayerStatus reports every key: balance, nonces, gap and low gas', async () => {
    const status = await app.ctx.facilitator!.relayerStatus();
    expect(status.map((s) => s.address)).toEqual(app.ctx.chain.facilitatorSigners());
    const client = app.ctx.chain.publicClient;
    for (const s of status) {
      expect(BigInt(s.balanceWei)).toBe(await client.getBalance({ address: s.address as Address }));
      expect(s.latestNonce).toBe(await client.getTransactionCount({ address: s.address as Address }));
      expect(s.pendingNonce).toBe(s.latestNonce);
      expect(s.gap).toBe(0);
      expect(s.lowGas).toBe(false);
    }
  });

  it('relayerStatus flags a key below the threshold', async () => {
    const empty = privateKeyToAccount(generatePrivateKey());
    const funded = app.ctx.chain.relayers[0];
    const facilitator = new Facilitator(
      { db: app.ctx.db, clock: app.ctx.clock, log: app.ctx.log, chain: app.ctx.chain, relayer: [funded, empty] },
      { lowGasWei: parseEther('5') },
    );
    const status = await facilitator.relayerStatus();
    expect(status).toEqual([
      expect.objectContaining({ address: funded.address, lowGas: false }),
      { address: empty.address, balanceWei: '0', pendingNonce: 0, latestNonce: 0, gap: 0, lowGas: true, oldestUnminedSeconds: 0, stuck: false },
    ]);
    const strict = new Facilitator(
      { db: app.ctx.db, clock: app.ctx.clock, log: app.ctx.log, chain: app.ctx.chain, relayer: [funded] },
      { lowGasWei: parseEther('1000') },
    );
    expect((await strict.relayerStatus())[0].lowGas).toBe(true);
  });
});
