import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Address, Hash } from 'viem';
import type { TestApp } from '../helpers/test-app.js';
import { TRANSFER_TOPIC } from '../x402/support.js';
import { buildWalletsApp, call, freePort, settledPayment } from './helpers.js';

// The whole path on the embedded devchain: management credential → wallet → dev fund → wallet
// credential → pay-and-call of /x402-test/ping through our own facilitator.

const PRICE = 100n;
let app: TestApp;
let mgmt: string;
let walletId: string;
let address: Address;
let secret: string;
let ping: string;
let max: { network: string; asset: string; amount: string };

const balance = () => app.ctx.chain.devchain!.balanceOf(address);
const pay = (body: Record<string, unknown>, credential = secret) => call(app, 'POST', '/v1/wallets/me/pay-and-call', credential, { url: ping, maxPayment: max, ...body });
const paymentRows = async () => (await app.ctx.database.query<{ n: string }>(sql`select count(*)::text as n from wallet_payments where wallet_id = ${walletId}`))[0].n;

beforeAll(async () => {
  // The API's port is fixed up front so exactly its loopback origin can be allow-listed for http.
  const apiPort = await freePort();
  app = await buildWalletsApp({ env: { API_PORT: String(apiPort), PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${apiPort}` } });
  ping = `${app.urls.api}/x402-test/ping`;
  expect(ping).toBe(`http://127.0.0.1:${apiPort}/x402-test/ping`);
  max = { network: app.ctx.chain.network, asset: app.ctx.chain.asset.address, amount: '100' };
  mgmt = await app.mgmtSecret('e2e');

  const created = await call(app, 'POST', '/v1/wallets', mgmt, { externalId: 'agent-1', name: 'Agent one' });
  expect(created.status).toBe(201);
  expect(created.body.data.wallet.status).toBe('active');
  ({ id: walletId, address } = created.body.data.wallet);
  await app.ctx.chain.devchain!.fund(address, '1');
  const credential = await call(app, 'POST', `/v1/wallets/${walletId}/credentials`, mgmt, { name: 'runtime' });
  expect(credential.status).toBe(201);
  secret = credential.body.data.secret;
});
afterAll(async () => {
  await app?.close();
});

describe('pay-and-call on the devchain', () => {
  it('pays /x402-test/ping: 200 paid pong, answered pending with the seller\'s transaction, then settled by the chain; balance down by exactly 100', async () => {
    const before = await balance();
    const answer = await pay({});
    expect(answer.status).toBe(200);
    expect(answer.body.data.upstream).toMatchObject({ status: 200, body: { message: 'paid pong' }, bodyEncoding: 'json' });
    const payment = answer.body.data.payment;
    // The answer does not wait for the chain: the payment as recorded, the seller's receipt naming its transaction.
    expect(payment).toMatchObject({ status: 'pending', x402Version: 2, network: 'eip155:4663', asset: max.asset, amount: '100', transaction: null });
    expect(payment.settlement).toMatchObject({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await balance()).toBe(before - PRICE);
    const receipt = await app.ctx.chain.publicClient.getTransactionReceipt({ hash: payment.settlement.transaction as Hash });
    expect(receipt.status).toBe('success');
    // Then the chain confirms it: settled with that transaction.
    const settled = await settledPayment(app, secret, payment);
    expect(settled).toMatchObject({ status: 'settled', transaction: payment.settlement.transaction, error: null, amount: '100' });
    const listed = await call(app, 'GET', '/v1/wallets/me/payments', secret);
    expect(listed.body.data[0]).toEqual(settled);
  });

  it('refuses maxPayment.amount 99 with 400: nothing signed, nothing stored, balance unchanged', async () => {
    const before = await balance();
    const rows = await paymentRows();
    const answer = await pay({ maxPayment: { ...max, amount: '99' } });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe(1000);
    expect(answer.body.data.accepts).toEqual([expect.objectContaining({ scheme: 'exact', amount: '100', network: 'eip155:4663' })]);
    expect(await paymentRows()).toBe(rows);
    expect(await balance()).toBe(before);
  });

  it('returns payment null for an unpaid URL', async () => {
    const before = await balance();
    const answer = await pay({ url: `${app.urls.api}/health` });
    expect(answer.status).toBe(200);
    expect(answer.body.data.payment).toBeNull();
    expect(answer.body.data.upstream.status).toBe(200);
    expect(await balance()).toBe(before);
  });

  it('settles 20 parallel pay-and-calls from one wallet, each once', async () => {
    const before = await balance();
    const rows = Number(await paymentRows());
    const answers = await Promise.all(Array.from({ length: 20 }, () => pay({})));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(answers.every((a) => a.body.data.upstream.body.message === 'paid pong')).toBe(true);
    expect(answers.every((a) => a.body.data.payment.status === 'pending')).toBe(true);
    const transactions = (await Promise.all(answers.map((a) => settledPayment(app, secret, a.body.data.payment)))).map((p) => p.transaction);
    // Settles that arrive together may share a Multicall3 transaction: count the wallet's own transfers in them.
    let transfers = 0;
    for (const hash of new Set(transactions)) {
      const receipt = await app.ctx.chain.publicClient.getTransactionReceipt({ hash: hash as Hash });
      transfers += receipt.logs.filter((l) => l.topics[0] === TRANSFER_TOPIC && l.topics[1] && BigInt(l.topics[1]) === BigInt(address)).length;
    }
    expect(transfers).toBe(20);
    expect(await balance()).toBe(before - 20n * PRICE);
    expect(Number(await paymentRows())).toBe(rows + 20);
  });

  it('refuses a revoked wallet credential (401) and a wallet credential on /v1/wallets (401)', async () => {
    const made = await call(app, 'POST', `/v1/wallets/${walletId}/credentials`, mgmt, { name: 'to-revoke' });
    expect((await call(app, 'GET', '/v1/wallets/me', made.body.data.secret)).status).toBe(200);
    expect((await call(app, 'DELETE', `/v1/wallets/${walletId}/credentials/${made.body.data.id}`, mgmt)).body.data.status).toBe('revoked');
    const before = await balance();
    const revoked = await pay({}, made.body.data.secret);
    expect(revoked.status).toBe(401);
    expect(revoked.body.code).toBe(1001);
    expect(await balance()).toBe(before);
    const onMgmt = await call(app, 'GET', '/v1/wallets', secret);
    expect(onMgmt.status).toBe(401);
    expect(onMgmt.body).toEqual({ code: 1001, message: 'Missing or invalid credentials', data: null });
  });

  it('answers 502 when the wallet cannot cover the price; the refused payment stays open (unknown) for the chain to decide', async () => {
    const poor = await call(app, 'POST', '/v1/wallets', mgmt, { externalId: 'agent-poor', name: 'Unfunded' });
    const answer = await pay({}, poor.body.data.credential.secret);
    expect(answer.status).toBe(502);
    expect(answer.body.data.payment).toMatchObject({ status: 'unknown', transaction: null });
    expect(answer.body.data.payment.error).toMatch(/insufficient_balance|simulation_failed/);
  });
});

describe('pay-and-call with an Idempotency-Key', () => {
  const keyed = async (key: string, body: Record<string, unknown> = {}) => {
    const response = await app.origins.api!.inject({
      method: 'POST',
      url: '/v1/wallets/me/pay-and-call',
      headers: { authorization: `Bearer ${secret}`, 'idempotency-key': key },
      payload: { url: ping, maxPayment: max, ...body },
    });
    return { status: response.statusCode, replayed: response.headers['idempotent-replayed'] === 'true', body: response.json() };
  };

  it('the same key twice, and five copies at once: one payment on chain, every answer the first one', async () => {
    const before = { balance: await balance(), rows: Number(await paymentRows()) };
    const key = `agent-retry-${Date.now()}`;
    const first = await keyed(key);
    expect(first).toMatchObject({ status: 200, replayed: false, body: { data: { payment: { status: 'pending', amount: '100' } } } });
    // The stored answer is the answer as given (pending); the payment itself goes on to settled.
    expect(await keyed(key)).toEqual({ ...first, replayed: true });
    await settledPayment(app, secret, first.body.data.payment);

    const burstKey = `agent-burst-${Date.now()}`;
    const copies = await Promise.all(Array.from({ length: 5 }, () => keyed(burstKey)));
    expect(copies.map((c) => c.status)).toEqual([200, 200, 200, 200, 200]);
    expect(copies.filter((c) => !c.replayed)).toHaveLength(1);
    for (const copy of copies) expect(copy.body).toEqual(copies[0]!.body);

    expect(await balance()).toBe(before.balance - 2n * PRICE);
    expect(Number(await paymentRows())).toBe(before.rows + 2);
  });

  it('the same key with another body is 409 idempotency_conflict; a bad key is 400; nothing is paid', async () => {
    const key = `agent-other-${Date.now()}`;
    await keyed(key);
    const before = await balance();
    expect(await keyed(key, { method: 'POST' })).toMatchObject({ status: 409, body: { data: { reason: 'idempotency_conflict' } } });
    expect(await keyed('short')).toMatchObject({ status: 400, body: { data: { reason: 'invalid_idempotency_key' } } });
    expect(await balance()).toBe(before);
  });

  it("a call whose node died after paying (its record left running, its lease lapsed): the repeat finds the key's payment and never pays again", async () => {
    const key = `agent-crash-${Date.now()}`;
    const first = await keyed(key);
    expect(first.status).toBe(200);
    await settledPayment(app, secret, first.body.data.payment);
    // What a node killed between the payment and the stored answer leaves behind.
    await app.ctx.database.query(sql`update idempotency_records set status = 'running', owner = 'dead-node', lease_expires_at = now() - interval '1 second', answer = null, answer_status = null where key = ${key}`);
    const before = await balance();
    const repeat = await keyed(key);
    expect(repeat).toMatchObject({ status: 409, body: { data: { reason: 'idempotency_key_used', payment: { id: first.body.data.payment.id, status: 'settled' } } } });
    expect(await balance()).toBe(before);
    // Its answer is now the key's: the same again.
    expect(await keyed(key)).toEqual({ ...repeat, replayed: true });
  });
});
