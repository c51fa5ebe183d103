// A settlement transaction that stops being mineable (the base fee jumped above its max fee) is
// replaced at its nonce with higher fees; the replacement settles the payment, the ledger follows
// its hash, and the money moves once. Real anvil: automine off while the first version waits in the
// pool, then a block whose base fee the first version cannot pay.
import { getAddress, parseEther, parseGwei, toHex, type Address, type Hash } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { MULTICALL3_ADDRESS } from '../../src/chain/multicall3.js';
import { Facilitator, type FacilitatorOptions } from '../../src/x402/facilitator/facilitator.js';
import { chainVerdict } from '../../src/x402/facilitator/chain-verdict.js';
import { keyOf } from '../../src/x402/facilitator/ledger.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { balanceOf, fundedPayer, nonceOf, signAuthorization, transfersForNonce } from '../x402/support.js';
import { requirementsFor } from './support.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'] });
});
afterAll(async () => {
  await rpc('evm_setAutomine', [true]).catch(() => undefined);
  await app?.close();
});

const rpc = async (method: string, params: unknown[]) => {
  const res = await fetch(app.ctx.chain.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
};

async function facilitatorWith(relayer: PrivateKeyAccount, options: FacilitatorOptions) {
  // Enough for a replacement at the stranding base fee (150k gas at a few thousand gwei).
  await rpc('anvil_setBalance', [relayer.address, toHex(parseEther('1000'))]);
  return new Facilitator({ db: app.ctx.db, clock: app.ctx.clock, log: app.ctx.log, chain: app.ctx.chain, relayer }, options);
}

/** Waits until `check` holds (polling), or fails the test. */
async function until<T>(check: () => Promise<T | null | undefined | false>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Leaves the relayer's sent transaction in the pool, then mines a block it cannot pay for: it is stuck. */
async function strandPending(): Promise<void> {
  const base = (await app.ctx.chain.publicClient.getBlock()).baseFeePerGas!;
  const high = base * 10n > parseGwei('1000') ? base * 10n : parseGwei('1000');
  await rpc('anvil_setNextBlockBaseFeePerGas', [toHex(high)]);
  await rpc('evm_mine', []);
  await rpc('evm_setAutomine', [true]);
}

afterEach(async () => {
  // Back to a cheap chain for the next test.
  await rpc('evm_setAutomine', [true]);
  await rpc('anvil_setNextBlockBaseFeePerGas', [toHex(parseGwei('1'))]);
  await rpc('evm_mine', []);
});

const receiptOrNull = (hash: Hash) => app.ctx.chain.publicClient.getTransactionReceipt({ hash }).catch(() => null);

it('a stuck settlement is replaced with higher fees and settles through the replacement, once', async () => {
  const relayer = privateKeyToAccount(generatePrivateKey());
  const facilitator = await facilitatorWith(relayer, { replaceAfterMs: 1_000, confirmationTimeoutMs: 20_000 });
  const payer = await fundedPayer(app, '1');
  const requirements = requirementsFor(app);
  const payload = await signAuthorization(payer, requirements);
  const key = { network: requirements.network, asset: requirements.asset, payer: payer.address, nonce: nonceOf(payload) };

  await rpc('evm_setAutomine', [false]);
  const settling = facilitator.settle(payload, requirements);
  const first = await until(async () => (await facilitator.ledger.find(key))?.txHash as Hash | undefined);
  const firstTx = await app.ctx.chain.publicClient.getTransaction({ hash: first });
  await strandPending();
  expect(await receiptOrNull(first)).toBeNull();

  const result = await settling;
  expect(result.success).toBe(true);
  expect(result.transaction).not.toBe(first);
  const replacement = await app.ctx.chain.publicClient.getTransaction({ hash: result.transaction as Hash });
  // Same lane, same nonce, fees raised by at least 12.5 % on both fields.
  expect(getAddress(replacement.from)).toBe(relayer.address);
  expect(replacement.nonce).toBe(firstTx.nonce);
  expect(replacement.maxFeePerGas! * 1000n).toBeGreaterThanOrEqual(firstTx.maxFeePerGas! * 1125n);
  expect(replacement.maxPriorityFeePerGas! * 1000n).toBeGreaterThanOrEqual(firstTx.maxPriorityFeePerGas! * 1125n);
  expect(await receiptOrNull(first)).toBeNull();

  const row = await facilitator.ledger.find(key);
  expect(row).toMatchObject({ status: 'settled', txHash: result.transaction });
  expect(await transfersForNonce(app, payer.address, key.nonce)).toBe(1);
  expect(await balanceOf(app, requirements.payTo as Address)).toBe(100n);
  expect(await app.ctx.chain.publicClient.getTransactionCount({ address: relayer.address })).toBe(firstTx.nonce + 1);

  // A row that still named the first version is resolved by the AuthorizationUsed log to the replacement.
  expect(await chainVerdict(app.ctx.chain.publicClient, { ...row!, status: 'broadcast', txHash: first })).toMatchObject({ kind: 'settled', txHash: result.transaction });
});

it('a stuck batch is replaced as a whole: every settle in it follows the replacement, and each payment moves once', async () => {
  const relayer = privateKeyToAccount(generatePrivateKey());
  const facilitator = await facilitatorWith(relayer, { replaceAfterMs: 1_000, confirmationTimeoutMs: 20_000, batch: { maxCalls: 64, waitMs: 300, idle: 'wait' } });
  const payers = await Promise.all(Array.from({ length: 3 }, () => fundedPayer(app, '1')));
  const requirements = requirementsFor(app);
  const payloads = await Promise.all(payers.map((p) => signAuthorization(p, requirements)));
  const keys = payloads.map((p, i) => ({ network: requirements.network, asset: requirements.asset, payer: payers[i]!.address, nonce: nonceOf(p) }));

  await rpc('evm_setAutomine', [false]);
  const settling = Promise.all(payloads.map((p) => facilitator.settle(p, requirements)));
  const firsts = await until(async () => {
    const hashes = await Promise.all(keys.map(async (key) => (await facilitator.ledger.find(key))?.txHash));
    return hashes.every(Boolean) ? (hashes as Hash[]) : null;
  });
  expect(new Set(firsts).size).toBe(1); // one batch
  const firstTx = await app.ctx.chain.publicClient.getTransaction({ hash: firsts[0]! });
  expect(getAddress(firstTx.to!)).toBe(MULTICALL3_ADDRESS);
  await strandPending();

  const results = await settling;
  expect(results.every((r) => r.success)).toBe(true);
  const replacementHash = results[0]!.transaction as Hash;
  expect(results.every((r) => r.transaction === replacementHash)).toBe(true);
  expect(replacementHash).not.toBe(firsts[0]);
  const replacement = await app.ctx.chain.publicClient.getTransaction({ hash: replacementHash });
  expect(replacement.nonce).toBe(firstTx.nonce);
  expect(replacement.input).toBe(firstTx.input); // the same calls, higher fees
  expect(replacement.maxFeePerGas! * 1000n).toBeGreaterThanOrEqual(firstTx.maxFeePerGas! * 1125n);
  expect(await receiptOrNull(firsts[0]!)).toBeNull();
  for (const [i, key] of keys.entries()) {
    expect(await facilitator.ledger.find(key)).toMatchObject({ status: 'settled', txHash: replacementHash });
    expect(await transfersForNonce(app, payers[i]!.address, key.nonce)).toBe(1);
  }
  expect(await balanceOf(app, requirements.payTo as Address)).toBe(300n);
});

it('after a settle gave up waiting, the lane still replaces it; the ledger, the retry and the reconciler follow the new hash', async () => {
  const relayer = privateKeyToAccount(generatePrivateKey());
  const facilitator = await facilitatorWith(relayer, { replaceAfterMs: 1_500, confirmationTimeoutMs: 400, joinWaitMs: 2_000, reconcileAfterMs: 1 });
  const payer = await fundedPayer(app, '1');
  const requirements = requirementsFor(app);
  const payload = await signAuthorization(payer, requirements);
  const key = { network: requirements.network, asset: requirements.asset, payer: payer.address, nonce: nonceOf(payload) };

  await rpc('evm_setAutomine', [false]);
  const pending = await facilitator.settle(payload, requirements);
  expect(pending).toMatchObject({ success: false, errorReason: 'settlement_pending' });
  const first = pending.transaction as Hash;
  expect((await facilitator.ledger.find(key))?.txHash).toBe(first);
  await strandPending();

  // Nobody waits for it any more; the lane replaces it and records the replacement in the ledger.
  const replaced = await until(async () => {
    const row = await facilitator.ledger.find(key);
    return row?.txHash && row.txHash !== first && (await receiptOrNull(row.txHash as Hash)) ? row : null;
  });
  expect(replaced.status).toBe('broadcast');
  expect(await receiptOrNull(first)).toBeNull();

  const reconciled = await facilitator.reconcileOpen();
  expect(reconciled.resolved).toBe(1);
  expect(await facilitator.ledger.find(keyOf(replaced))).toMatchObject({ status: 'settled', txHash: replaced.txHash });
  const retried = await facilitator.settle(payload, requirements);
  expect(retried).toMatchObject({ success: true, transaction: replaced.txHash });
  expect(await transfersForNonce(app, payer.address, key.nonce)).toBe(1);
  expect(await balanceOf(app, requirements.payTo as Address)).toBe(100n);
});

it('a settlement transaction the node forgot (evicted) is sent again at once, replacements used up or not; a lasting gap makes the lane stuck', async () => {
  const relayer = privateKeyToAccount(generatePrivateKey());
  // No replacement will ever come (maxReplacements 0): only the refill can close the gap.
  const facilitator = await facilitatorWith(relayer, { replaceAfterMs: 60_000, maxReplacements: 0, confirmationTimeoutMs: 20_000 });
  const payer = await fundedPayer(app, '1');
  const requirements = requirementsFor(app);
  const payload = await signAuthorization(payer, requirements);
  await rpc('evm_setAutomine', [false]);
  const settling = facilitator.settle(payload, requirements);
  const row = await until(async () => {
    const found = await facilitator.ledger.find(keyOf({ network: 'eip155:4663', asset: getAddress(requirements.asset), payer: payer.address, nonce: nonceOf(payload) }));
    return found?.txHash ? found : null;
  });
  const hash = row.txHash as Hash;

  await rpc('anvil_dropTransaction', [hash]);
  expect(await app.ctx.chain.publicClient.getTransactionCount({ address: relayer.address, blockTag: 'pending' })).toBe(0);
  // Back in the pool within a few polls, under the same hash.
  await until(async () => (await app.ctx.chain.publicClient.getTransactionCount({ address: relayer.address, blockTag: 'pending' })) === 1);
  await rpc('evm_mine', []);
  await rpc('evm_setAutomine', [true]);

  expect(await settling).toMatchObject({ success: true, transaction: hash });
  expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
  const [status] = await facilitator.relayerStatus();
  expect(status).toMatchObject({ gap: 0, stuck: false, oldestUnminedSeconds: 0 });
});

it('a transaction that outlives every replacement marks its lane stuck (what the relayer check of GET /ready reads) until it mines', async () => {
  const relayer = privateKeyToAccount(generatePrivateKey());
  // stuck after replaceAfterMs × (maxReplacements + 2) = 300 ms.
  const facilitator = await facilitatorWith(relayer, { replaceAfterMs: 150, maxReplacements: 0, confirmationTimeoutMs: 20_000 });
  const payer = await fundedPayer(app, '1');
  const requirements = requirementsFor(app);
  const payload = await signAuthorization(payer, requirements);
  await rpc('evm_setAutomine', [false]);
  const settling = facilitator.settle(payload, requirements);

  const [stuck] = await until(async () => {
    const status = await facilitator.relayerStatus();
    return status[0]!.stuck ? status : null;
  });
  expect(stuck).toMatchObject({ gap: 1, stuck: true });
  await rpc('evm_mine', []);
  await rpc('evm_setAutomine', [true]);
  expect(await settling).toMatchObject({ success: true });
  expect(await facilitator.relayerStatus()).toMatchObject([{ gap: 0, stuck: false }]);
});
