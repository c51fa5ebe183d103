// batch-settlement end to end through our facilitator, with the official @x402/evm client and server: the first
// call deposits into a channel (one relayer transaction), the next calls pay with off-chain vouchers (none), and
// the seller's channel manager claims them in one transaction and sweeps them to its payee in another. Balances
// of the payer, the payee, the channel and the relayer are read from the chain.
import type { SettleResponse } from '@x402/core/types';
import { BATCH_SETTLEMENT_DOMAIN, refundTypes } from '@x402/evm';
import { and, eq } from 'drizzle-orm';
import { createPublicClient, createWalletClient, custom, http, parseAbi, type Hex, type LocalAccount, type PublicClient } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_SETTLEMENT } from '../../src/chain/x402-contracts.js';
import { adminCommands } from '../../src/admin/commands.js';
import { batchAbi, channelVerdict } from '../../src/x402/facilitator/batch/chain.js';
import { x402Settlements, type SettlementRow } from '../../src/x402/tables.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { fundedPayer } from '../x402/support.js';
import { batchBuyer, channelOf, channelState, NETWORK, startBatchSeller, type BatchSeller } from './batch-support.js';
import { gasOf, relayerState } from './permit2-support.js';
import { post } from './support.js';

let app: TestApp;
let seller: BatchSeller;
const usdg = () => app.ctx.chain.devchain!;

beforeAll(async () => {
  app = await buildTestApp();
  seller = await startBatchSeller(app, '1000');
});
afterAll(async () => {
  await seller?.close();
  await app?.close();
});

describe('batch-settlement with the official client and server', () => {
  it('one deposit, ten calls paid by vouchers, one claim, one sweep: three relayer transactions in all', async () => {
    const payer = await fundedPayer(app, '1');
    const buyer = batchBuyer(app, payer);
    const { channelId } = channelOf(payer.address, seller, app.ctx.chain.asset.address);
    const [payerBefore, relayerBefore] = [await usdg().balanceOf(payer.address), await relayerState(app)];

    const first = await buyer.pay(`${seller.url}/call`);
    expect(first.status).toBe(200);
    const deposited = await channelState(app, channelId);
    expect(deposited.balance).toBeGreaterThanOrEqual(10_000n);
    expect(payerBefore - (await usdg().balanceOf(payer.address))).toBe(deposited.balance);
    expect((await relayerState(app)).sent - relayerBefore.sent).toBe(1);

    for (let i = 0; i < 9; i++) expect((await buyer.pay(`${seller.url}/call`)).status).toBe(200);
    // Vouchers move nothing on chain and cost no gas.
    expect((await relayerState(app)).sent - relayerBefore.sent).toBe(1);
    expect(await usdg().balanceOf(seller.payTo)).toBe(0n);

    const manager = seller.scheme.createChannelManager(seller.facilitator, NETWORK, app.ctx.chain.asset.address);
    const result = await manager.claimAndSettle();
    expect(await usdg().balanceOf(seller.payTo)).toBe(10_000n);
    const after = await channelState(app, channelId);
    expect(after).toMatchObject({ balance: deposited.balance, totalClaimed: 10_000n });
    // The escrow holds the rest: what the payer deposited minus what it used.
    expect(await usdg().balanceOf(BATCH_SETTLEMENT)).toBeGreaterThanOrEqual(deposited.balance - 10_000n);
    const relayerAfter = await relayerState(app);
    expect(relayerAfter.sent - relayerBefore.sent).toBe(3);
    const [claim, sweep] = [await gasOf(app, result.claims[0]!.transaction as `0x${string}`), await gasOf(app, result.settle!.transaction as `0x${string}`)];
    console.log(`batch-settlement: claim of 1 voucher ${claim.used} gas (limit ${claim.limit}), sweep ${sweep.used} gas (limit ${sweep.limit})`);
  });

  it("the seller's cooperative refund claims what was used and returns the rest to the payer, once", async () => {
    const payer = await fundedPayer(app, '1');
    const buyer = batchBuyer(app, payer);
    for (let i = 0; i < 3; i++) expect((await buyer.pay(`${seller.url}/call`)).status).toBe(200);
    const { channelId } = channelOf(payer.address, seller, app.ctx.chain.asset.address);
    const deposited = (await channelState(app, channelId)).balance;
    const payerBefore = await usdg().balanceOf(payer.address);
    const relayerBefore = await relayerState(app);
    const manager = seller.scheme.createChannelManager(seller.facilitator, NETWORK, app.ctx.chain.asset.address);
    const refunded = await manager.refund([channelId]);
    expect(refunded).toHaveLength(1);
    // One transaction: the contract's multicall claims the 3 calls used, then refunds the rest.
    expect((await relayerState(app)).sent - relayerBefore.sent).toBe(1);
    expect((await usdg().balanceOf(payer.address)) - payerBefore).toBe(deposited - 3000n);
    expect(await channelState(app, channelId)).toMatchObject({ balance: 3000n, totalClaimed: 3000n, refundNonce: 1n });
    // The same refund again (its nonce is spent): answered from its row, nothing sent.
    const sent = (await relayerState(app)).sent;
    const last = seller.settles[seller.settles.length - 1]!;
    expect((last.payload.payload as { type: string }).type).toBe('refund');
    expect((await post<SettleResponse>(app, 'settle', last.payload, last.requirements)).body).toMatchObject({ success: false, transaction: refunded[0]!.transaction });
    expect((await relayerState(app)).sent).toBe(sent);
    const gas = await gasOf(app, refunded[0]!.transaction as `0x${string}`);
    console.log(`batch-settlement refund with a claim: ${gas.used} gas used, limit ${gas.limit}`);
  });

  it('a deposit settled twice moves money once; the copy is refused with its transaction', async () => {
    const payer = await fundedPayer(app, '1');
    const buyer = batchBuyer(app, payer);
    const first = await fetch(`${seller.url}/call`);
    const required = buyer.http.getPaymentRequiredResponse((name) => first.headers.get(name), await first.json());
    const payload = await buyer.http.createPaymentPayload(required);
    expect((payload.payload as { type: string }).type).toBe('deposit');
    const requirements = payload.accepted;
    const answers = await Promise.all(Array.from({ length: 4 }, () => post<SettleResponse>(app, 'settle', payload, requirements)));
    const wins = answers.filter((a) => a.body.success);
    expect(wins).toHaveLength(1);
    expect(wins[0]!.body).toMatchObject({ amount: (payload.payload as { deposit: { amount: string } }).deposit.amount });
    expect(wins[0]!.body.extra).toHaveProperty('channelState');
    const gas = await gasOf(app, wins[0]!.body.transaction as `0x${string}`);
    console.log(`batch-settlement deposit: ${gas.used} gas used, limit ${gas.limit}`);
    for (const loss of answers.filter((a) => !a.body.success)) expect(loss.body.errorReason).toBe('invalid_exact_evm_nonce_already_used');
    const { channelId } = channelOf(payer.address, seller, app.ctx.chain.asset.address);
    expect((await channelState(app, channelId)).balance).toBe(BigInt((payload.payload as { deposit: { amount: string } }).deposit.amount));
  });
});

/** The same chain through an RPC that does not serve these methods yet (empty logs, no receipts): state ahead of them. */
function lagging(methods: string[]): PublicClient {
  const upstream = http(app.ctx.chain.rpcUrl)({});
  const behind = (method: string) => (method === 'eth_getLogs' ? [] : null);
  return createPublicClient({ transport: custom({ request: async (args: { method: string; params?: unknown }) => (methods.includes(args.method) ? behind(args.method) : upstream.request(args as never)) }) });
}

describe('a claim row decided from the chain alone (its transaction hash never reached the row)', () => {
  it('its Claimed event found: settled, from the logs or, when none is served, the receipts of the block that reached it; neither served: pending; past it by a larger claim: failed', async () => {
    const payer = await fundedPayer(app, '1');
    const buyer = batchBuyer(app, payer);
    for (let i = 0; i < 2; i++) expect((await buyer.pay(`${seller.url}/call`)).status).toBe(200);
    const manager = seller.scheme.createChannelManager(seller.facilitator, NETWORK, app.ctx.chain.asset.address);
    const [claimed] = await manager.claim();
    const [row] = await app.ctx.db.select().from(x402Settlements).where(and(eq(x402Settlements.kind, 'batch-claim'), eq(x402Settlements.payer, payer.address)));
    expect(row).toMatchObject({ status: 'settled', txHash: claimed!.transaction });
    // The row as a crash between send and recordBroadcast left it: claimed, no hash.
    const open: SettlementRow = { ...row!, status: 'claimed', txHash: null };
    expect(await channelVerdict(app.ctx.chain.publicClient, open)).toMatchObject({ kind: 'settled', txHash: claimed!.transaction as Hex });
    expect(await channelVerdict(lagging(['eth_getLogs']), open)).toMatchObject({ kind: 'settled', txHash: claimed!.transaction as Hex });
    // The state ahead of both: the claim may be ours, so no verdict yet (never "failed").
    expect(await channelVerdict(lagging(['eth_getLogs', 'eth_getBlockReceipts']), open)).toEqual({ kind: 'pending' });
    // An increment below the 2000 the chain claimed in one transaction was never claimed on its own.
    const { channelId } = channelOf(payer.address, seller, app.ctx.chain.asset.address);
    const below: SettlementRow = { ...open, amount: '1000', request: { channelId, totalClaimed: '1000' } };
    for (const client of [app.ctx.chain.publicClient, lagging(['eth_getLogs'])]) {
      expect(await channelVerdict(client, below)).toMatchObject({ kind: 'failed', reason: 'invalid_batch_settlement_evm_cumulative_below_claimed' });
    }
  });
});

describe('a refund row decided from the chain alone (its transaction hash never reached the row)', () => {
  it('paid: settled by its log, and by its receipt when the logs lag; a refund that found nothing to return: failed', async () => {
    const payer = await fundedPayer(app, '1');
    const buyer = batchBuyer(app, payer);
    for (let i = 0; i < 2; i++) expect((await buyer.pay(`${seller.url}/call`)).status).toBe(200);
    const { channelId, config } = channelOf(payer.address, seller, app.ctx.chain.asset.address);
    const manager = seller.scheme.createChannelManager(seller.facilitator, NETWORK, app.ctx.chain.asset.address);
    const [paid] = await manager.refund([channelId]);
    const rows = await app.ctx.db.select().from(x402Settlements).where(and(eq(x402Settlements.kind, 'batch-refund'), eq(x402Settlements.payer, payer.address)));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'settled', txHash: paid!.transaction });
    // The row as a crash between send and recordBroadcast left it: claimed, no hash.
    const open: SettlementRow = { ...rows[0]!, status: 'claimed', txHash: null };
    expect(await channelVerdict(app.ctx.chain.publicClient, open)).toMatchObject({ kind: 'settled', txHash: paid!.transaction as Hex });
    // No Refunded log served: the transaction that spent the nonce is found by the channel's state, and its receipt pays.
    expect(await channelVerdict(lagging(['eth_getLogs']), open)).toMatchObject({ kind: 'settled', txHash: paid!.transaction as Hex });
    expect(await channelVerdict(lagging(['eth_getLogs', 'eth_getTransactionReceipt']), open)).toEqual({ kind: 'pending' });

    // Nothing unclaimed is left: a refund signed for nonce 1 spends the nonce, moves nothing and emits no Refunded.
    expect(await channelState(app, channelId)).toMatchObject({ balance: 2000n, totalClaimed: 2000n, refundNonce: 1n });
    const signature = await seller.authorizer.signTypedData(refundTypedData(channelId, 1n, 500n));
    const empty = await sendRefund(payer, 'refundWithSignature', [config, 500n, 1n, signature]);
    const emptyRow = refundRow(open, 1n);
    for (const client of [app.ctx.chain.publicClient, lagging(['eth_getLogs'])]) {
      expect(await channelVerdict(client, emptyRow)).toMatchObject({ kind: 'failed', reason: 'invalid_batch_settlement_evm_refund_no_balance', txHash: empty });
    }
    // The receiver side's own refund() spends nonce 2: the refund signed for it never ran.
    await adminCommands(app.ctx, app.modules)['dev.fund']({ address: seller.authorizer.address, amount: '0' });
    await sendRefund(seller.authorizer, 'refund', [config, 500n]);
    expect(await channelVerdict(lagging(['eth_getLogs']), refundRow(open, 2n))).toMatchObject({ kind: 'failed', reason: 'invalid_batch_settlement_evm_refund_transaction_failed', txHash: null });
    expect(await channelState(app, channelId)).toMatchObject({ balance: 2000n, refundNonce: 3n });
  });

  const receiverRefundAbi = parseAbi([
    'struct ChannelConfig { address payer; address payerAuthorizer; address receiver; address receiverAuthorizer; address token; uint40 withdrawDelay; bytes32 salt; }',
    'function refund(ChannelConfig config, uint128 amount)',
  ]);

  /** The open row of a refund signed for `nonce` (the request it was claimed with names the nonce). */
  const refundRow = (row: SettlementRow, nonce: bigint): SettlementRow => {
    const request = structuredClone(row.request) as { payload: { payload: { refundNonce: string } } };
    request.payload.payload.refundNonce = nonce.toString();
    return { ...row, request };
  };

  /** A receiver-authorizer refund signature's typed data, in the official SDK's domain and types. */
  const refundTypedData = (channelId: Hex, nonce: bigint, amount: bigint) => ({
    domain: { ...BATCH_SETTLEMENT_DOMAIN, chainId: app.ctx.chain.viemChain.id, verifyingContract: BATCH_SETTLEMENT },
    types: refundTypes,
    primaryType: 'Refund' as const,
    message: { channelId, nonce, amount },
  });

  async function sendRefund(from: LocalAccount, functionName: 'refund' | 'refundWithSignature', args: readonly unknown[]): Promise<Hex> {
    const wallet = createWalletClient({ account: from, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
    const hash = await wallet.writeContract({ address: BATCH_SETTLEMENT, abi: [...batchAbi, ...receiverRefundAbi], functionName, args: args as never });
    expect((await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash })).status).toBe('success');
    return hash;
  }
});
