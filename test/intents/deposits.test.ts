// Deposit addresses (docs/intents.md#deposit-addresses) on the devchain with the real facilitator: an intent paid by
// plain ERC-20 transfers from fresh keys that sign nothing for us (no EIP-3009), credited by the deposit watcher,
// settled once through the intents' state machine and events, and swept to the merchant's payTo with an EIP-3009
// authorization of the deposit key that our facilitator relays. Every amount is read from the chain.
import { sql } from 'drizzle-orm';
import { createWalletClient, getAddress, http, type Address } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcCall } from '../../src/chain/rpc.js';
import { usdgAbi } from '../../src/chain/usdg-artifact.js';
import type { Clock } from '../../src/platform/clock.js';
import type { TestApp } from '../helpers/test-app.js';
import { createIntent, createShop, type Shop } from './fixtures.js';
import { balanceOf, buildPayApp, eventually, fundedPayer, getIntent, pay, signedHeader, transfersTo } from './harness.js';

/** The system clock, moved by `shift` ms while a test creates an intent that is to expire soon. */
let shift = 0;
const clock: Clock = { now: () => new Date(Date.now() + shift) };
const LIFETIME = 3600;
let app: TestApp;

beforeAll(async () => {
  app = await buildPayApp({
    clock,
    env: { INTENT_LIFETIME_SECONDS: String(LIFETIME), INTENT_RECONCILE_INTERVAL_MS: '200', INTENT_RECONCILE_GRACE_SECONDS: '2' },
  });
}, 120_000);
afterAll(async () => app?.close());

async function call(method: 'GET' | 'POST' | 'PATCH', url: string, secret?: string, payload?: unknown, headers: Record<string, string> = {}) {
  const response = await app.origins.api!.inject({ method, url, headers: { ...(secret ? { authorization: `Bearer ${secret}` } : {}), ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });
  return { status: response.statusCode, body: response.json() };
}

const checkout = async (intentId: string) => (await call('GET', `/v1/payment-intents/${intentId}/checkout`)).body;

/** A fresh key holding `usdg` and gas, that pays with a plain transfer(to, amount): no signature for anyone but the chain. */
async function plainTransfer(from: PrivateKeyAccount, to: string, amount: bigint): Promise<`0x${string}`> {
  const wallet = createWalletClient({ account: from, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
  // A fixed gas limit: an estimate made while the deposit held funds runs out of gas if a sweep empties it first.
  const hash = await wallet.writeContract({ address: app.ctx.chain.asset.address, abi: usdgAbi, functionName: 'transfer', args: [to as Address, amount], gas: 100_000n });
  const receipt = await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash });
  expect(receipt.status).toBe('success');
  return hash;
}

async function queueFor(shop: Shop): Promise<string> {
  const queue = await call('POST', '/v1/event-queues', shop.apiKey, { name: 'intent-events' });
  expect(queue.status).toBe(201);
  expect((await call('PATCH', `/v1/projects/${shop.projectId}`, shop.identity, { intentEventsQueueId: queue.body.data.id })).status).toBe(200);
  return queue.body.data.id;
}
const eventsIn = (queueId: string) =>
  app.ctx.database.query<{ payload: Record<string, unknown>; deduplication_key: string }>(sql`select payload, deduplication_key from events where queue_id = ${queueId} order by id`);

const swept = (address: string) => eventually(async () => (await balanceOf(app, address as Address)) === 0n && (await app.ctx.database.query<{ n: number }>(sql`select count(*)::int as n from payment_intent_sweeps where from_address = ${getAddress(address)} and status = 'sending'`))[0]!.n === 0, 30_000);

describe('deposit addresses', () => {
  it('a plain transfer from a fresh key settles the intent once; the payTo receives the amount; the deposit holds nothing after', async () => {
    const shop = await createShop(app);
    const queueId = await queueFor(shop);
    const intent = (await createIntent(app, shop, { amountUsdCents: 1250, metadata: { order: 'A-1' } })).json();
    const view = await checkout(intent.id);
    const address = view.deposit.address as string;
    expect(address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(view.deposit).toEqual({ address, due: '12500000', uri: `ethereum:${app.ctx.chain.asset.address}@4663/transfer?address=${address}&uint256=12500000` });
    // The same address on every read, and another intent's is another.
    expect((await checkout(intent.id)).deposit.address).toBe(address);
    const other = (await createIntent(app, shop)).json();
    expect((await checkout(other.id)).deposit.address).not.toBe(address);

    const payer = await fundedPayer(app, '20');
    const hash = await plainTransfer(payer, address, 12_500_000n);
    const settled = await eventually(async () => {
      const current = await getIntent(app, shop.apiKey, intent.id);
      return current.status === 'settled' ? current : null;
    });
    expect(settled).toMatchObject({ status: 'settled', paidVia: 'deposit', transactionHash: hash, receivedUsdCents: 1250, refundedUsdCents: 0 });
    expect(await checkout(intent.id)).toMatchObject({ status: 'settled', paidVia: 'deposit', payer: payer.address, deposit: { address, due: '0' } });

    // Swept on to the merchant by our facilitator: the deposit address never held gas.
    await swept(address);
    expect(await balanceOf(app, shop.payTo)).toBe(12_500_000n);
    expect(await app.ctx.chain.publicClient.getBalance({ address: address as Address })).toBe(0n);
    const intoPayTo = await transfersTo(app, shop.payTo);
    expect(intoPayTo.map((log) => getAddress(log.args.from!))).toEqual([getAddress(address)]);

    // One event, with the intent's metadata; settling again (the loop's catch-up) publishes nothing.
    const events = await eventsIn(queueId);
    expect(events.map((event) => event.deduplication_key)).toEqual([`payment_intent:${intent.id}:settled`]);
    expect(events[0]!.payload).toMatchObject({ type: 'payment_intent.settled', intentId: intent.id, status: 'settled', paidVia: 'deposit', metadata: { order: 'A-1' }, failureCode: null });
    // Paying with x402 now answers the settlement, and charges nothing.
    expect((await pay(app, intent.id)).statusCode).toBe(200);
  }, 60_000);

  it('underpaid: stays payable showing what is still due; the rest settles it', async () => {
    const shop = await createShop(app);
    const intent = (await createIntent(app, shop, { amountUsdCents: 1000 })).json();
    const { address } = (await checkout(intent.id)).deposit;
    const payer = await fundedPayer(app, '20');
    await plainTransfer(payer, address, 4_000_000n);
    const partial = await eventually(async () => {
      const view = await checkout(intent.id);
      return view.deposit.due === '6000000' ? view : null;
    });
    expect(partial).toMatchObject({ status: 'pending', deposit: { due: '6000000', uri: `ethereum:${app.ctx.chain.asset.address}@4663/transfer?address=${address}&uint256=6000000` } });
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'pending', receivedUsdCents: 400 });
    // A second sender completes it; the one who completed it is the payer.
    const other = await fundedPayer(app, '20');
    const hash = await plainTransfer(other, address, 6_000_000n);
    const settled = await eventually(async () => {
      const current = await getIntent(app, shop.apiKey, intent.id);
      return current.status === 'settled' ? current : null;
    });
    expect(settled).toMatchObject({ paidVia: 'deposit', transactionHash: hash, receivedUsdCents: 1000 });
    await swept(address);
    expect(await balanceOf(app, shop.payTo)).toBe(10_000_000n);
  }, 60_000);

  it('overpaid: settled, and the excess is recorded against the intent (refundable) and swept too', async () => {
    const shop = await createShop(app);
    const intent = (await createIntent(app, shop, { amountUsdCents: 500 })).json();
    const { address } = (await checkout(intent.id)).deposit;
    await plainTransfer(await fundedPayer(app, '20'), address, 7_000_000n);
    const settled = await eventually(async () => {
      const current = await getIntent(app, shop.apiKey, intent.id);
      return current.status === 'settled' ? current : null;
    });
    expect(settled).toMatchObject({ paidVia: 'deposit', amountUsdCents: 500, receivedUsdCents: 700 });
    await swept(address);
    expect(await balanceOf(app, shop.payTo)).toBe(7_000_000n);
  }, 60_000);

  it('paid after expiry: the intent stays expired, the payment is recorded against it (refundable) and swept', async () => {
    const shop = await createShop(app);
    // Created as if 3 s before its lifetime ends.
    shift = -(LIFETIME - 3) * 1000;
    const intent = (await createIntent(app, shop, { amountUsdCents: 300 })).json();
    shift = 0;
    const { address } = (await checkout(intent.id)).deposit;
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const payer = await fundedPayer(app, '20');
    // Late by the chain's own clock, which decides on_time: the transfer's block is stamped past the expiry (anvil's
    // block time, in whole seconds, need not follow the wall clock to the second on a loaded machine).
    const latest = (await app.ctx.chain.publicClient.getBlock()).timestamp;
    const pastExpiry = BigInt(Math.ceil(Date.parse(intent.expiresAt) / 1000)) + 1n;
    await rpcCall(app.ctx.chain.rpcUrl, 'evm_setNextBlockTimestamp', [Number(latest >= pastExpiry ? latest + 1n : pastExpiry)]);
    await plainTransfer(payer, address, 3_000_000n);
    const late = await eventually(async () => {
      const current = await getIntent(app, shop.apiKey, intent.id);
      return current.receivedUsdCents === 300 ? current : null;
    });
    expect(late).toMatchObject({ status: 'expired', paidVia: null, transactionHash: null, receivedUsdCents: 300 });
    const [row] = await app.ctx.database.query<{ on_time: boolean }>(sql`select on_time from payment_intent_deposit_transfers where intent_id = ${intent.id}`);
    expect(row!.on_time).toBe(false);
    expect((await checkout(intent.id)).deposit).toMatchObject({ address, due: '0' });
    await swept(address);
    expect(await balanceOf(app, shop.payTo)).toBe(3_000_000n);
  }, 60_000);

  it('a deposit to an intent already paid with x402 is an overpayment: recorded, refundable, swept', async () => {
    const shop = await createShop(app);
    const intent = (await createIntent(app, shop, { amountUsdCents: 200 })).json();
    const { address } = (await checkout(intent.id)).deposit;
    const payer = await fundedPayer(app, '20');
    expect((await pay(app, intent.id, { 'payment-signature': await signedHeader(app, intent.id, payer) })).statusCode).toBe(200);
    await plainTransfer(payer, address, 2_000_000n);
    const both = await eventually(async () => {
      const current = await getIntent(app, shop.apiKey, intent.id);
      return current.receivedUsdCents === 400 ? current : null;
    });
    expect(both).toMatchObject({ status: 'settled', paidVia: 'x402', receivedUsdCents: 400 });
    await swept(address);
    expect(await balanceOf(app, shop.payTo)).toBe(4_000_000n);
  }, 60_000);

  it('never derives the same address twice: per intent, and per project key', async () => {
    const a = await createShop(app);
    const b = await createShop(app);
    const addresses = new Set<string>();
    for (const shop of [a, b, a, b]) addresses.add((await checkout((await createIntent(app, shop)).json().id)).deposit.address);
    expect(addresses.size).toBe(4);
    // The projects' keys are sealed: no key material in the table, only the sealed blob.
    const keys = await app.ctx.database.query<{ sealed_seed: string }>(sql`select sealed_seed from payment_intent_deposit_keys where project_id in (${a.projectId}, ${b.projectId})`);
    expect(keys).toHaveLength(2);
    for (const key of keys) expect(key.sealed_seed).toMatch(/^v1\./);
  });
});

