import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Address, Hex } from 'viem';
import { BATCH_SETTLEMENT } from '../../src/chain/x402-contracts.js';
import type { TestApp } from '../helpers/test-app.js';
import { channelState, NETWORK, startBatchSeller, type BatchSeller } from '../facilitator/batch-support.js';
import { relayerState } from '../facilitator/permit2-support.js';
import { buildWalletsApp, call, createWallet } from './helpers.js';

// Wallet channels end to end on the devchain: the official batch-settlement SERVER (@x402/express with the SDK's
// scheme, as the facilitator tests start it) and our facilitator; the wallet signs through the official client's parts.
// Every amount is read from the chain: the payer's, the payee's, the channel's, the relayer's transactions.

let app: TestApp;
let mgmt: string;
const usdg = () => app.ctx.chain.devchain!;
const maxPayment = (amount = '10000') => ({ network: NETWORK, asset: app.ctx.chain.asset.address, amount });

interface Agent {
  id: string;
  address: Address;
  secret: string;
}

async function agent(name: string): Promise<Agent> {
  const { wallet, secret } = await createWallet(app, mgmt, name);
  await usdg().fund(wallet.address, '1');
  return { id: wallet.id, address: wallet.address, secret };
}

/** A call with an Idempotency-Key (and the replay marker of its answer). */
async function keyed(agentSecret: string, url: string, key: string | null, payload?: unknown) {
  const response = await app.origins.api!.inject({
    method: 'POST',
    url,
    headers: { authorization: `Bearer ${agentSecret}`, ...(key ? { 'idempotency-key': key } : {}) },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return { status: response.statusCode, body: response.json(), replayed: response.headers['idempotent-replayed'] === 'true' };
}

const payAndCall = (a: Agent, seller: BatchSeller, amount = '10000') => call(app, 'POST', '/v1/wallets/me/pay-and-call', a.secret, { url: `${seller.url}/call`, maxPayment: maxPayment(amount) });
const vouchers = (a: Agent) =>
  app.ctx.database.query<{ status: string; amount: string; nonce: string; error: string | null }>(
    sql`select status, amount::text, nonce, error from wallet_payments where wallet_id = ${a.id} and scheme = 'batch-settlement' order by created_at`,
  );
const cumulatives = async (a: Agent, status = 'settled') => (await vouchers(a)).filter((v) => v.status === status).map((v) => BigInt(v.nonce.split(':')[1]!)).sort((x, y) => (x < y ? -1 : 1));

beforeAll(async () => {
  app = await buildWalletsApp({ env: { PAY_AND_CALL_ALLOW_HOSTS: '127.0.0.1' } });
  mgmt = await app.mgmtSecret('channels');
});
afterAll(async () => app?.close());

describe('wallet channels (x402 batch-settlement) with the official seller and our facilitator', () => {
  it('open, vouchers without transactions, concurrent calls on one channel, top-up, claim and sweep, close: every amount on chain', async () => {
    const seller = await startBatchSeller(app, '1000');
    try {
      const a = await agent('channels-e2e');
      const payerStart = await usdg().balanceOf(a.address);
      const relayerStart = await relayerState(app);

      // Open: a paid call that deposits 20000 with its first voucher (one relayer transaction: the deposit).
      const openBody = { url: `${seller.url}/call`, maxPayment: maxPayment(), deposit: '20000' };
      const opened = await keyed(a.secret, '/v1/wallets/me/channels', 'open-key-0001', openBody);
      expect(opened.status).toBe(200);
      expect(opened.body.data.upstream.body).toEqual({ call: 1 });
      expect(opened.body.data.payment).toMatchObject({ status: 'settled', scheme: 'batch-settlement', amount: '1000' });
      const channel = opened.body.data.channel;
      expect(channel).toMatchObject({ status: 'open', deposited: '20000', paid: '1000', signedMax: '1000', chainBalance: '20000', claimed: '0', payee: seller.payTo });
      const channelId = channel.channelId as Hex;
      expect((await channelState(app, channelId)).balance).toBe(20_000n);
      expect(payerStart - (await usdg().balanceOf(a.address))).toBe(20_000n);
      expect((await relayerState(app)).sent - relayerStart.sent).toBe(1);

      // The same key and body: the first answer, nothing deposited again; another body under it: 409.
      const again = await keyed(a.secret, '/v1/wallets/me/channels', 'open-key-0001', openBody);
      expect(again).toMatchObject({ status: 200, replayed: true });
      expect(again.body.data.payment.id).toBe(opened.body.data.payment.id);
      const conflict = await keyed(a.secret, '/v1/wallets/me/channels', 'open-key-0001', { ...openBody, deposit: '30000' });
      expect(conflict.status).toBe(409);
      expect(conflict.body.data.reason).toBe('idempotency_conflict');
      expect((await channelState(app, channelId)).balance).toBe(20_000n);
      expect(seller.served()).toBe(1);

      // Four calls by voucher: no transaction at all.
      for (let i = 0; i < 4; i++) {
        const paid = await payAndCall(a, seller);
        expect(paid.status).toBe(200);
        expect(paid.body.data.payment).toMatchObject({ status: 'settled', scheme: 'batch-settlement', amount: '1000', transaction: null });
      }
      expect((await relayerState(app)).sent - relayerStart.sent).toBe(1);
      expect(await usdg().balanceOf(seller.payTo)).toBe(0n);

      // Eight at once on the one channel: serialised on its row, each on the base the previous one left.
      const burst = await Promise.all(Array.from({ length: 8 }, () => payAndCall(a, seller)));
      expect(burst.map((r) => r.status)).toEqual(Array(8).fill(200));
      expect(await cumulatives(a)).toEqual(Array.from({ length: 13 }, (_, i) => BigInt((i + 1) * 1000)));
      expect(seller.served()).toBe(13);
      const listed = await call(app, 'GET', '/v1/wallets/me/channels', a.secret);
      expect(listed.body.data).toHaveLength(1);
      expect(listed.body.data[0]).toMatchObject({ channelId, paid: '13000', signedMax: '13000', deposited: '20000' });

      // Top-up: another deposit with one call's voucher (the second relayer transaction); a repeat of its key sends nothing.
      const topUpBody = { deposit: '10000', maxPayment: maxPayment() };
      const topped = await keyed(a.secret, `/v1/wallets/me/channels/${channel.id}/deposits`, 'top-up-key-01', topUpBody);
      expect(topped.status).toBe(200);
      expect(topped.body.data.channel).toMatchObject({ deposited: '30000', paid: '14000', chainBalance: '30000' });
      expect((await keyed(a.secret, `/v1/wallets/me/channels/${channel.id}/deposits`, 'top-up-key-01', topUpBody)).replayed).toBe(true);
      expect((await channelState(app, channelId)).balance).toBe(30_000n);
      expect((await relayerState(app)).sent - relayerStart.sent).toBe(2);
      expect(payerStart - (await usdg().balanceOf(a.address))).toBe(30_000n);

      // The seller claims the vouchers and sweeps them to its payee.
      const manager = seller.scheme.createChannelManager(seller.facilitator, NETWORK, app.ctx.chain.asset.address);
      await manager.claimAndSettle();
      expect(await usdg().balanceOf(seller.payTo)).toBe(14_000n);
      expect((await call(app, 'GET', `/v1/wallets/me/channels/${channelId}`, a.secret)).body.data).toMatchObject({ claimed: '14000', chainBalance: '30000' });

      // Close: the seller's cooperative refund returns what vouchers did not pay, in one transaction.
      const relayerBeforeClose = (await relayerState(app)).sent;
      const escrowBefore = await usdg().balanceOf(BATCH_SETTLEMENT);
      const closed = await keyed(a.secret, `/v1/wallets/me/channels/${channel.id}/close`, 'close-key-001');
      expect(closed.status).toBe(200);
      expect(closed.body.data).toMatchObject({ refunded: '16000', channel: { status: 'closed', claimed: '14000', chainBalance: '14000' } });
      expect((await relayerState(app)).sent - relayerBeforeClose).toBe(1);
      expect(escrowBefore - (await usdg().balanceOf(BATCH_SETTLEMENT))).toBe(16_000n);
      // The payer paid 14 calls of 1000 in all: its balance says so.
      expect(payerStart - (await usdg().balanceOf(a.address))).toBe(14_000n);
      const replay = await keyed(a.secret, `/v1/wallets/me/channels/${channel.id}/close`, 'close-key-001');
      expect(replay).toMatchObject({ status: 200, replayed: true });
      expect((await relayerState(app)).sent - relayerBeforeClose).toBe(1);
      const closeAgain = await keyed(a.secret, `/v1/wallets/me/channels/${channel.id}/close`, 'close-key-002');
      expect(closeAgain.status).toBe(409);
      expect(closeAgain.body.message).toMatch(/closed already/);
      expect((await vouchers(a)).every((v) => v.status === 'settled')).toBe(true);
    } finally {
      await seller.close();
    }
  });

  it('pay-and-call without a channel deposits only within maxPayment, with the first voucher', async () => {
    const seller = await startBatchSeller(app, '1000', '4000');
    try {
      const a = await agent('channels-auto');
      const before = await usdg().balanceOf(a.address);
      const paid = await payAndCall(a, seller, '5000');
      expect(paid.status).toBe(200);
      // The seller announced 4000; within maxPayment (5000), so 4000 is locked, 1000 of it paid.
      const [row] = (await call(app, 'GET', '/v1/wallets/me/channels', a.secret)).body.data;
      expect(row).toMatchObject({ deposited: '4000', paid: '1000', chainBalance: '4000' });
      expect(before - (await usdg().balanceOf(a.address))).toBe(4000n);
      for (let i = 0; i < 3; i++) expect((await payAndCall(a, seller, '5000')).status).toBe(200);
      // The fifth call needs 1000 more than the channel holds: a top-up of the seller's minimum, within maxPayment.
      expect((await payAndCall(a, seller, '5000')).status).toBe(200);
      expect((await channelState(app, row.channelId)).balance).toBe(8000n);
      // maxPayment below what the next deposit needs is no reason to lock more: 1000 ≤ 1000 passes, 999 would not match.
      expect((await payAndCall(a, seller, '999')).status).toBe(400);
    } finally {
      await seller.close();
    }
  });

  it("a voucher whose answer was lost (the record fell behind the seller) resyncs from the seller's copy of our signature", async () => {
    const seller = await startBatchSeller(app, '1000');
    try {
      const a = await agent('channels-lost');
      expect((await keyed(a.secret, '/v1/wallets/me/channels', 'lost-open-0001', { url: `${seller.url}/call`, maxPayment: maxPayment(), deposit: '10000' })).status).toBe(200);
      expect((await payAndCall(a, seller)).status).toBe(200);
      // As if the process died after the seller charged 2000 but before we recorded it: our base is 1000 behind.
      await app.ctx.database.query(sql`update wallet_channels set charged_cumulative = 1000 where wallet_id = ${a.id}`);
      await app.ctx.database.query(sql`update wallet_payments set status = 'unknown' where wallet_id = ${a.id} and nonce like '%:2000'`);
      const paid = await payAndCall(a, seller);
      expect(paid.status).toBe(200);
      expect(paid.body.data.payment).toMatchObject({ status: 'settled', amount: '1000' });
      const [row] = (await call(app, 'GET', '/v1/wallets/me/channels', a.secret)).body.data;
      expect(row).toMatchObject({ paid: '3000', signedMax: '3000' });
      // The voucher signed on the stale base was refused by the seller and is recorded failed; the seller served 3 calls.
      expect(seller.served()).toBe(3);
      expect(await cumulatives(a)).toEqual([1000n, 2000n, 3000n]);
      expect((await vouchers(a)).filter((v) => v.status === 'failed')).toHaveLength(1);
      const manager = seller.scheme.createChannelManager(seller.facilitator, NETWORK, app.ctx.chain.asset.address);
      await manager.claimAndSettle();
      expect(await usdg().balanceOf(seller.payTo)).toBe(3000n);
    } finally {
      await seller.close();
    }
  });

  it('the spend policy counts vouchers, not deposits: a voucher past the limit is refused before it is signed', async () => {
    const seller = await startBatchSeller(app, '1000');
    try {
      const a = await agent('channels-policy');
      const policy = await call(app, 'PUT', `/v1/wallets/${a.id}/policy`, mgmt, { limits: [{ window: '24h', ...maxPayment('3000') }] });
      expect(policy.status).toBe(200);
      // A deposit of 20000 under a 3000 limit: locked, not spent; its voucher (1000) is what counts.
      const opened = await keyed(a.secret, '/v1/wallets/me/channels', 'policy-open-001', { url: `${seller.url}/call`, maxPayment: maxPayment(), deposit: '20000' });
      expect(opened.status).toBe(200);
      for (let i = 0; i < 2; i++) expect((await payAndCall(a, seller)).status).toBe(200);
      const refused = await payAndCall(a, seller);
      expect(refused.status).toBe(409);
      expect(refused.body.data).toMatchObject({ reason: 'policy_limit_exceeded', rule: 'limits[0]' });
      const [channel] = (await call(app, 'GET', '/v1/wallets/me/channels', a.secret)).body.data;
      expect(channel).toMatchObject({ paid: '3000', signedMax: '3000', chainBalance: '20000' });
      expect(seller.served()).toBe(3);
      const budget = await call(app, 'GET', '/v1/wallets/me/budget', a.secret);
      expect(budget.body.data[0]).toMatchObject({ spent: '3000', reserved: '0', remaining: '0' });
    } finally {
      await seller.close();
    }
  });

  it('bad input changes nothing: unknown channel, another wallet’s channel, amount 0, no Idempotency-Key', async () => {
    const seller = await startBatchSeller(app, '1000');
    try {
      const a = await agent('channels-bad-a');
      const b = await agent('channels-bad-b');
      const opened = await keyed(a.secret, '/v1/wallets/me/channels', 'bad-open-00001', { url: `${seller.url}/call`, maxPayment: maxPayment(), deposit: '10000' });
      expect(opened.status).toBe(200);
      const { id, channelId } = opened.body.data.channel;
      const balance = (await channelState(app, channelId)).balance;
      const unknown = '0190a3a0-0000-7000-8000-000000000000';
      for (const path of [`/v1/wallets/me/channels/${unknown}`, `/v1/wallets/me/channels/${id}`, `/v1/wallets/me/channels/${channelId}`, '/v1/wallets/me/channels/not-an-id']) {
        expect((await call(app, 'GET', path, b.secret)).status).toBe(404);
      }
      expect((await call(app, 'GET', `/v1/wallets/me/channels/${unknown}`, a.secret)).status).toBe(404);
      expect((await keyed(b.secret, `/v1/wallets/me/channels/${id}/close`, 'bad-close-0001')).status).toBe(404);
      expect((await keyed(b.secret, `/v1/wallets/me/channels/${id}/deposits`, 'bad-topup-0001', { deposit: '1000', maxPayment: maxPayment() })).status).toBe(404);
      for (const deposit of ['0', '-5', '1.5', 'abc', String(2n ** 128n)]) {
        const bad = await keyed(a.secret, `/v1/wallets/me/channels/${id}/deposits`, `bad-amount-${deposit.length}-${deposit.slice(0, 3)}`, { deposit, maxPayment: maxPayment() });
        expect(bad.status).toBe(400);
      }
      const noKey = await keyed(a.secret, `/v1/wallets/me/channels/${id}/close`, null);
      expect(noKey.status).toBe(400);
      expect(noKey.body.data.reason).toBe('idempotency_key_required');
      // A deposit below what the call's voucher needs is refused before anything is signed.
      const tooSmall = await keyed(b.secret, '/v1/wallets/me/channels', 'bad-open-00002', { url: `${seller.url}/call`, maxPayment: maxPayment(), deposit: '1' });
      expect(tooSmall.status).toBe(400);
      expect(tooSmall.body.data.reason).toBe('deposit_too_small');
      expect((await call(app, 'GET', '/v1/wallets/me/channels', b.secret)).body.data.every((c: { chainBalance: string }) => c.chainBalance === '0')).toBe(true);
      expect((await channelState(app, channelId)).balance).toBe(balance);
      expect(seller.served()).toBe(1);
      // The management credential is refused on the wallet's routes.
      expect((await call(app, 'GET', '/v1/wallets/me/channels', mgmt)).status).toBe(401);
    } finally {
      await seller.close();
    }
  });
});
