// Batched settlement on the devchain: settles that arrive together leave as one Multicall3 aggregate3
// transaction, each authorization judged by its own AuthorizationUsed/Transfer pair. One failing call
// (a payer whose balance ran out, a payment someone executed first) never fails the others; a lone
// settle waits no longer than the window and goes out as a plain transfer.
import { getAddress, type Address, type Hash } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MULTICALL3_ADDRESS } from '../../src/chain/multicall3.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { balanceOf, executeElsewhere, fundedPayer, nonceOf, signAuthorization, transfersForNonce } from '../x402/support.js';
import { requirementsFor } from './support.js';

// Long enough that the six settles of a test join one batch on a loaded CI machine (300 ms let one slip into
// the next batch now and then).
const WINDOW_MS = 1_000;
let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp({ roles: ['facilitator'], env: { FACILITATOR_BATCH_MAX_CALLS: '64', FACILITATOR_BATCH_WAIT_MS: String(WINDOW_MS), FACILITATOR_BATCH_IDLE: 'wait', FACILITATOR_RELAYER_COUNT: '2' } });
});
afterAll(async () => app?.close());

const facilitator = () => app.ctx.facilitator!;
const tx = (hash: string) => app.ctx.chain.publicClient.getTransaction({ hash: hash as Hash });
const rowOf = (payload: Awaited<ReturnType<typeof signAuthorization>>, requirements: { network: string; asset: string }) =>
  facilitator().ledger.find({ network: requirements.network, asset: requirements.asset, payer: getAddress((payload.payload as { authorization: { from: string } }).authorization.from), nonce: nonceOf(payload) });
/** Transactions every relayer key has had mined. */
const relayerSends = async () =>
  (await Promise.all(app.ctx.chain.relayers.map((key) => app.ctx.chain.publicClient.getTransactionCount({ address: key.address })))).reduce((a, b) => a + b, 0);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('batched settlement', () => {
  it('20 settles at once share a Multicall3 transaction; each moves its own payment once, with its own transfer log', async () => {
    const payers = await Promise.all(Array.from({ length: 20 }, () => fundedPayer(app, '1')));
    const requirements = requirementsFor(app, '1000');
    const payloads = await Promise.all(payers.map((p) => signAuthorization(p, requirements)));

    const results = await Promise.all(payloads.map((p) => facilitator().settle(p, requirements)));
    expect(results.every((r) => r.success)).toBe(true);
    const hashes = [...new Set(results.map((r) => r.transaction))];
    expect(hashes.length).toBeLessThanOrEqual(2);
    for (const hash of hashes) expect(getAddress((await tx(hash)).to!)).toBe(MULTICALL3_ADDRESS);
    expect(await balanceOf(app, requirements.payTo as Address)).toBe(20n * 1000n);
    const logIndexes = new Set<string>();
    for (const [i, payload] of payloads.entries()) {
      expect(await transfersForNonce(app, payers[i]!.address, nonceOf(payload))).toBe(1);
      const row = await rowOf(payload, requirements);
      expect(row).toMatchObject({ status: 'settled', txHash: results[i]!.transaction });
      logIndexes.add(`${row!.txHash}:${row!.transferLogIndex}`);
    }
    expect(logIndexes.size).toBe(20); // each success claims its own Transfer, never a neighbour's
  });

  it('a payer whose balance covers only its first payment: the first is paid, the second fails alone with its reason, the others in the batch are paid', async () => {
    const payer = await fundedPayer(app, '1'); // 1,000,000 units: one payment of 600,000, not two
    const others = await Promise.all(Array.from({ length: 4 }, () => fundedPayer(app, '1')));
    const requirements = requirementsFor(app, '600000');
    const [first, second] = await Promise.all([signAuthorization(payer, requirements), signAuthorization(payer, requirements)]);
    const theirs = await Promise.all(others.map((p) => signAuthorization(p, requirements)));
    const sentBefore = await relayerSends();

    // Each alone is valid (its simulation passes); together they are not. The first accepted is the first executed.
    const settlingFirst = facilitator().settle(first, requirements);
    await sleep(40);
    const settling = [facilitator().settle(second, requirements), ...theirs.map((p) => facilitator().settle(p, requirements))];
    const [a, b, ...rest] = await Promise.all([settlingFirst, ...settling]);

    expect(a).toMatchObject({ success: true });
    expect(b).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_insufficient_balance', transaction: a!.transaction });
    expect(rest.every((r) => r.success && r.transaction === a!.transaction)).toBe(true);
    expect(getAddress((await tx(a!.transaction)).to!)).toBe(MULTICALL3_ADDRESS);
    expect(await transfersForNonce(app, payer.address, nonceOf(first))).toBe(1);
    expect(await transfersForNonce(app, payer.address, nonceOf(second))).toBe(0);
    expect(await balanceOf(app, requirements.payTo as Address)).toBe(5n * 600000n);
    expect(await rowOf(second, requirements)).toMatchObject({ status: 'failed' });
    // The failed member is judged, never retried at our cost: one transaction for all six, and a settle of it again sends nothing.
    expect(await relayerSends()).toBe(sentBefore + 1);
    expect(await facilitator().settle(second, requirements)).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_insufficient_balance' });
    expect(await relayerSends()).toBe(sentBefore + 1);
  });

  it('a payment someone executes first while its batch is open: that transfer pays it (one success), the batch still pays the others', async () => {
    const payers = await Promise.all(Array.from({ length: 3 }, () => fundedPayer(app, '1')));
    const requirements = requirementsFor(app, '1000');
    const payloads = await Promise.all(payers.map((p) => signAuthorization(p, requirements)));

    const settling = payloads.map((p) => facilitator().settle(p, requirements));
    await sleep(60);
    const frontRun = await executeElsewhere(app, payloads[0]!); // a third party read the authorization and sent it itself
    const results = await Promise.all(settling);

    expect(results[0]).toMatchObject({ success: true, transaction: frontRun.transactionHash });
    expect(results[1]!.success && results[2]!.success).toBe(true);
    expect(results[1]!.transaction).toBe(results[2]!.transaction);
    expect(results[1]!.transaction).not.toBe(frontRun.transactionHash);
    for (const [i, payload] of payloads.entries()) expect(await transfersForNonce(app, payers[i]!.address, nonceOf(payload))).toBe(1);
    expect(await balanceOf(app, requirements.payTo as Address)).toBe(3000n);
    // Its copy is told it was used: one payment, one success.
    expect(await facilitator().settle(payloads[0]!, requirements)).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_nonce_already_used' });
  });

  it('a lone settle waits no longer than the window and goes out as a plain transfer', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app, '1000');
    const payload = await signAuthorization(payer, requirements);
    const started = performance.now();
    const result = await facilitator().settle(payload, requirements);
    const elapsed = performance.now() - started;
    expect(result.success).toBe(true);
    expect(elapsed).toBeLessThan(WINDOW_MS + 1_500);
    expect(getAddress((await tx(result.transaction)).to!)).toBe(getAddress(requirements.asset));
  });
});
