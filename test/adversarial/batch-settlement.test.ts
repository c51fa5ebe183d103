// batch-settlement's attackers, against our facilitator with the official client and server: a seller (or anyone
// holding its signed claim) replaying a claim, a claim whose cumulative amount goes backwards, a payer draining its
// channel before the seller claims, and a payer racing a withdrawal against a claim. Every attack ends with the
// chain's word: what the relayer sent, what the payee and the payer hold; a refused attack costs no transaction.
import type { SettleResponse, VerifyResponse } from '@x402/core/types';
import { parseGwei, type Hex, type LocalAccount } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcCall } from '../../src/chain/rpc.js';
import { BATCH_SETTLEMENT } from '../../src/chain/x402-contracts.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { fundedPayer } from '../x402/support.js';
import { batchBuyer, channelOf, channelState, NETWORK, passTime, payerWithdraw, startBatchSeller, WITHDRAW_DELAY, type BatchSeller } from '../facilitator/batch-support.js';
import { relayerState } from '../facilitator/permit2-support.js';
import { post } from '../facilitator/support.js';
import { reportTally, tally } from './support.js';

let app: TestApp;
let seller: BatchSeller;
const usdg = () => app.ctx.chain.devchain!;
const settle = (payload: unknown, requirements: unknown) => post<SettleResponse>(app, 'settle', payload, requirements);
const verify = (payload: unknown, requirements: unknown) => post<VerifyResponse>(app, 'verify', payload, requirements);

const claimBatchTypes = {
  ClaimBatch: [{ name: 'claims', type: 'ClaimEntry[]' }],
  ClaimEntry: [
    { name: 'channelId', type: 'bytes32' },
    { name: 'maxClaimableAmount', type: 'uint128' },
    { name: 'totalClaimed', type: 'uint128' },
  ],
} as const;

interface Claim {
  voucher: { channel: ReturnType<typeof channelOf>['config']; maxClaimableAmount: string };
  signature: Hex;
  totalClaimed: string;
}

/** A claim payload as the seller's channel manager sends it, signed by the seller's receiverAuthorizer. */
async function claimPayload(claims: Claim[], authorizer: LocalAccount = seller.authorizer) {
  const signature = await authorizer.signTypedData({
    domain: { name: 'x402 Batch Settlement', version: '1', chainId: 4663, verifyingContract: BATCH_SETTLEMENT },
    types: claimBatchTypes,
    primaryType: 'ClaimBatch',
    message: { claims: claims.map((c) => ({ channelId: channelOf(c.voucher.channel.payer, seller, c.voucher.channel.token).channelId, maxClaimableAmount: BigInt(c.voucher.maxClaimableAmount), totalClaimed: BigInt(c.totalClaimed) })) },
  });
  const requirements = { scheme: 'batch-settlement', network: NETWORK, asset: app.ctx.chain.asset.address, amount: '0', payTo: seller.payTo, maxTimeoutSeconds: 0, extra: {} };
  return { payload: { x402Version: 2, accepted: requirements, payload: { type: 'claim', claims, claimAuthorizerSignature: signature } }, requirements };
}

/** A payer who deposited and paid `calls` calls with vouchers the seller holds: the seller's claimable voucher. */
async function paidCalls(calls: number): Promise<{ payer: LocalAccount; claim: Claim; channelId: Hex; buyer: ReturnType<typeof batchBuyer> }> {
  const payer = await fundedPayer(app, '1');
  const buyer = batchBuyer(app, payer);
  for (let i = 0; i < calls; i++) expect((await buyer.pay(`${seller.url}/call`)).status).toBe(200);
  const { channelId } = channelOf(payer.address, seller, app.ctx.chain.asset.address);
  const manager = seller.scheme.createChannelManager(seller.facilitator, NETWORK, app.ctx.chain.asset.address);
  const claim = (await manager.getClaimableVouchers()).find((c) => c.voucher.channel.payer === payer.address) as unknown as Claim;
  return { payer, claim, channelId, buyer };
}

/** Runs an attack that must be refused before anything is sent: 0 relayer transactions, the float untouched. */
async function refusedWithNoSend<T>(attack: () => Promise<T>): Promise<T> {
  const before = await relayerState(app);
  const result = await attack();
  const after = await relayerState(app);
  tally.attacks += 1;
  expect(after.sent - before.sent, 'transactions sent for a refused attack').toBe(0);
  expect(after.wei).toBe(before.wei);
  return result;
}

beforeAll(async () => {
  app = await buildTestApp();
  seller = await startBatchSeller(app, '1000');
});
afterAll(async () => {
  reportTally('batch-settlement');
  await seller?.close();
  await app?.close();
});

describe('a claim replayed or going backwards', () => {
  it('a voucher replayed: the same signed claim sent again after it paid is refused and sends nothing', async () => {
    const { claim, channelId } = await paidCalls(3);
    const { payload, requirements } = await claimPayload([claim]);
    expect((await settle(payload, requirements)).body).toMatchObject({ success: true });
    expect((await channelState(app, channelId)).totalClaimed).toBe(3000n);
    const again = await refusedWithNoSend(() => settle(payload, requirements));
    expect(again.body).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_cumulative_below_claimed' });
    expect((await channelState(app, channelId)).totalClaimed).toBe(3000n);
  });

  it('eight copies of one claim at once: one transaction, one success, the increment claimed once', async () => {
    const { claim, channelId } = await paidCalls(2);
    const { payload, requirements } = await claimPayload([claim]);
    const before = await relayerState(app);
    const answers = await Promise.all(Array.from({ length: 8 }, () => settle(payload, requirements)));
    expect(answers.filter((a) => a.body.success), JSON.stringify(answers.map((a) => [a.status, a.body]))).toHaveLength(1);
    expect((await relayerState(app)).sent - before.sent).toBe(1);
    expect((await channelState(app, channelId)).totalClaimed).toBe(2000n);
  });

  it('a cumulative amount that goes backwards: an older voucher claimed after a newer one, and a voucher below the claimed total at verify', async () => {
    const { payer, claim, channelId, buyer } = await paidCalls(2);
    const older = { ...claim };
    expect((await buyer.pay(`${seller.url}/call`)).status).toBe(200);
    const manager = seller.scheme.createChannelManager(seller.facilitator, NETWORK, app.ctx.chain.asset.address);
    const newer = (await manager.getClaimableVouchers()).find((c) => c.voucher.channel.payer === payer.address) as unknown as Claim;
    expect(BigInt(newer.totalClaimed)).toBe(3000n);
    const paid = await claimPayload([newer]);
    expect((await settle(paid.payload, paid.requirements)).body).toMatchObject({ success: true });
    const backwards = await claimPayload([older]);
    expect((await refusedWithNoSend(() => settle(backwards.payload, backwards.requirements))).body).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_cumulative_below_claimed' });
    // The payer signs a voucher for less than the chain has claimed: /verify refuses it.
    const { config } = channelOf(payer.address, seller, app.ctx.chain.asset.address);
    const voucherSig = await payer.signTypedData({
      domain: { name: 'x402 Batch Settlement', version: '1', chainId: 4663, verifyingContract: BATCH_SETTLEMENT },
      types: { Voucher: [{ name: 'channelId', type: 'bytes32' }, { name: 'maxClaimableAmount', type: 'uint128' }] },
      primaryType: 'Voucher',
      message: { channelId, maxClaimableAmount: 2500n },
    });
    const first = await fetch(`${seller.url}/call`);
    const requirements = buyer.http.getPaymentRequiredResponse((n) => first.headers.get(n), await first.json()).accepts[0]!;
    const voucher = { x402Version: 2, accepted: requirements, payload: { type: 'voucher', channelConfig: config, voucher: { channelId, maxClaimableAmount: '2500', signature: voucherSig } } };
    expect((await verify(voucher, requirements)).body).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_cumulative_below_claimed' });
    expect((await channelState(app, channelId)).totalClaimed).toBe(3000n);
  });

  it('a claim batch not signed by the receiverAuthorizer, or a voucher not signed by its payer, sends nothing', async () => {
    const { claim } = await paidCalls(1);
    const forged = await claimPayload([claim], (await fundedPayer(app, '0')) as LocalAccount);
    expect((await refusedWithNoSend(() => settle(forged.payload, forged.requirements))).body).toMatchObject({ errorReason: 'invalid_batch_settlement_evm_claim_signature' });
    const inflated = await claimPayload([{ ...claim, voucher: { ...claim.voucher, maxClaimableAmount: '999999' }, totalClaimed: '999999' }]);
    expect((await refusedWithNoSend(() => settle(inflated.payload, inflated.requirements))).body).toMatchObject({ errorReason: 'invalid_batch_settlement_evm_voucher_signature' });
  });
});

describe('withdrawals against claims (the chain clock moves past the withdrawal delay)', () => {
  let drained: Awaited<ReturnType<typeof paidCalls>>;
  let windowed: Awaited<ReturnType<typeof paidCalls>>;
  let raced: Awaited<ReturnType<typeof paidCalls>>;
  beforeAll(async () => {
    // Every channel is paid before the clock moves: payments signed later would be expired by the chain's time.
    [drained, windowed, raced] = [await paidCalls(4), await paidCalls(4), await paidCalls(4)];
    for (const c of [drained, windowed, raced]) {
      const { config } = channelOf(c.payer.address, seller, app.ctx.chain.asset.address);
      const state = await channelState(app, c.channelId);
      await payerWithdraw(app, c.payer, config, 'initiate', state.balance - state.totalClaimed);
    }
  });

  it('the seller sees a pending withdrawal in /verify (withdrawRequestedAt) while it can still claim', async () => {
    const { config } = channelOf(windowed.payer.address, seller, app.ctx.chain.asset.address);
    const first = await fetch(`${seller.url}/call`);
    const requirements = windowed.buyer.http.getPaymentRequiredResponse((n) => first.headers.get(n), await first.json()).accepts[0]!;
    const voucher = { x402Version: 2, accepted: requirements, payload: { type: 'voucher', channelConfig: config, voucher: { channelId: windowed.channelId, maxClaimableAmount: windowed.claim.voucher.maxClaimableAmount, signature: windowed.claim.signature } } };
    const answer = (await verify(voucher, requirements)).body;
    expect(answer.isValid).toBe(true);
    expect((answer.extra as { withdrawRequestedAt: number }).withdrawRequestedAt).toBeGreaterThan(0);
    // Claimed within the window: the claim binds what the payer owes, the withdrawal gets only the rest.
    const { payload, requirements: claimRequirements } = await claimPayload([windowed.claim]);
    expect((await settle(payload, claimRequirements)).body).toMatchObject({ success: true });
  });

  it('a channel drained before the claim: the claim is refused before sending, the payee is paid nothing it was not owed', async () => {
    await passTime(app, WITHDRAW_DELAY + 1);
    const { config } = channelOf(drained.payer.address, seller, app.ctx.chain.asset.address);
    const payerBefore = await usdg().balanceOf(drained.payer.address);
    const deposit = (await channelState(app, drained.channelId)).balance;
    await payerWithdraw(app, drained.payer, config, 'finalize');
    expect((await usdg().balanceOf(drained.payer.address)) - payerBefore).toBe(deposit);
    const { payload, requirements } = await claimPayload([drained.claim]);
    const answer = await refusedWithNoSend(() => settle(payload, requirements));
    expect(answer.body).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_cumulative_exceeds_balance' });
    expect((await channelState(app, drained.channelId)).balance).toBe(0n);
  });

  it('the window claimed in time: the withdrawal returns only what was not claimed, the sweep pays exactly the claims', async () => {
    const { config } = channelOf(windowed.payer.address, seller, app.ctx.chain.asset.address);
    const state = await channelState(app, windowed.channelId);
    const payerBefore = await usdg().balanceOf(windowed.payer.address);
    await payerWithdraw(app, windowed.payer, config, 'finalize');
    expect((await usdg().balanceOf(windowed.payer.address)) - payerBefore).toBe(state.balance - state.totalClaimed);
    expect(await channelState(app, windowed.channelId)).toMatchObject({ balance: state.totalClaimed, totalClaimed: state.totalClaimed });
  });

  it('a withdrawal raced against a claim in one block: the claim that lost reverts once, is answered failed, and is never sent again', async () => {
    const { config } = channelOf(raced.payer.address, seller, app.ctx.chain.asset.address);
    const { payload, requirements } = await claimPayload([raced.claim]);
    const before = await relayerState(app);
    // Our claim is checked and estimated with the channel still full and waits in the pool; the payer's finalize
    // arrives after it with a far higher tip, so the block runs the finalize first and our claim reverts.
    await rpcCall(app.ctx.chain.rpcUrl, 'evm_setAutomine', [false]);
    let claimAnswer: Promise<{ status: number; body: SettleResponse }>;
    try {
      claimAnswer = settle(payload, requirements);
      for (let i = 0; i < 100 && (await relayerPending(app)) === 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await relayerPending(app)).toBe(1);
      const finalize = payerWithdraw(app, raced.payer, config, 'finalize', 0n, { maxPriorityFeePerGas: parseGwei('50'), maxFeePerGas: parseGwei('100') });
      await new Promise((r) => setTimeout(r, 200));
      await rpcCall(app.ctx.chain.rpcUrl, 'evm_mine', []);
      await finalize;
    } finally {
      await rpcCall(app.ctx.chain.rpcUrl, 'evm_setAutomine', [true]);
    }
    const answer = await claimAnswer!;
    expect(answer.body).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_claim_transaction_failed' });
    const receipt = await app.ctx.chain.publicClient.getTransactionReceipt({ hash: answer.body.transaction as Hex });
    expect(receipt.status).toBe('reverted');
    expect(receipt.gasUsed).toBeLessThanOrEqual(60_000n + 60_000n);
    expect((await relayerState(app)).sent - before.sent).toBe(1);
    // Answered from its row from now on: never sent again.
    const again = await refusedWithNoSend(() => settle(payload, requirements));
    expect(again.body.success).toBe(false);
    expect((await channelState(app, raced.channelId)).balance).toBe(0n);
  });
});

/** Transactions the relayer keys have in the pool (sent, not mined). */
async function relayerPending(app: TestApp): Promise<number> {
  const client = app.ctx.chain.publicClient;
  const counts = await Promise.all(
    app.ctx.chain.relayers.map(async (r) => (await client.getTransactionCount({ address: r.address, blockTag: 'pending' })) - (await client.getTransactionCount({ address: r.address, blockTag: 'latest' }))),
  );
  return counts.reduce((a, b) => a + b, 0);
}
