import { readFileSync } from 'node:fs';
import type http from 'node:http';
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import type { PaymentRequirements } from '@x402/core/types';
import { createPublicClient, http as viemHttp, type Address, type Hash, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eip3009Abi } from '../../src/chain/eip3009.js';
import { PaymentReconciler } from '../../src/modules/wallets/reconcile.js';
import { WalletsStore } from '../../src/modules/wallets/store.js';
import { paymentsReconcileLoop } from '../../src/modules/wallets/worker.js';
import type { Clock } from '../../src/platform/clock.js';
import type { TestApp } from '../helpers/test-app.js';
import { buildWalletsApp, call, createWallet, freePort, startUpstream, waitFor, type Recorded, type Upstream } from './helpers.js';
import { eq } from 'drizzle-orm';
import { walletPayments } from '../../src/modules/wallets/tables.js';

// Pay-and-call payments are settled by the chain, not by the upstream's word. The upstream here is a
// real x402 seller on loopback: it challenges for USDG on the devchain and settles (when it does)
// through the service's own facilitator over HTTP; balances and logs are read from the chain.

const PRICE = '100';
const FAKE_TX = `0x${'ab'.repeat(32)}`;
const payTo = privateKeyToAccount(generatePrivateKey()).address;
type Handler = (req: Recorded, res: http.ServerResponse) => unknown;
const routes = new Map<string, Handler>();
let upstream: Upstream;
let app: TestApp;
let wallet: { id: string; address: Address };
let secret: string;
let requirement: (amount: string) => PaymentRequirements;

beforeAll(async () => {
  upstream = await startUpstream((req, res) => void (routes.get(req.url) ?? ((_r: Recorded, s: http.ServerResponse) => s.writeHead(404).end()))(req, res));
  app = await buildWalletsApp({ env: { PAY_AND_CALL_ALLOW_HOSTS: upstream.host } });
  const chain = app.ctx.chain;
  requirement = (amount) => ({ scheme: 'exact', network: chain.network as `${string}:${string}`, asset: chain.asset.address, amount, payTo, maxTimeoutSeconds: 300, extra: { name: chain.asset.eip712.name, version: chain.asset.eip712.version } });
  ({ wallet, secret } = await createWallet(app, await app.mgmtSecret(), 'chain-payer'));
  await chain.devchain!.fund(wallet.address, '1');
});
afterAll(async () => {
  await app?.close();
  await upstream?.close();
});

const url = (path: string) => `${upstream.origin}${path}`;
const pay = (path: string, amount = PRICE) =>
  call(app, 'POST', '/v1/wallets/me/pay-and-call', secret, { url: url(path), maxPayment: { network: app.ctx.chain.network, asset: app.ctx.chain.asset.address, amount } });
const paymentById = async (id: string) => ((await call(app, 'GET', '/v1/wallets/me/payments?limit=100', secret)).body.data as Array<{ id: string; status: string; transaction: string | null; error: string | null }>).find((p) => p.id === id)!;
const balance = (address: Address) => app.ctx.chain.devchain!.balanceOf(address);

function challenge(res: http.ServerResponse, accepts: PaymentRequirements[]) {
  res.writeHead(402, { 'payment-required': encodePaymentRequiredHeader({ x402Version: 2, resource: { url: 'http://seller/item' }, accepts }), 'content-type': 'application/json' }).end('{}');
}

/** "Settled", says the seller, naming a transaction that does not exist. */
function claimSuccess(res: http.ServerResponse) {
  const receipt = encodePaymentResponseHeader({ success: true, transaction: FAKE_TX, network: app.ctx.chain.network as `${string}:${string}`, payer: wallet.address });
  res.writeHead(200, { 'payment-response': receipt, 'content-type': 'application/json' }).end('{"item":"yours"}');
}

/**
 * A seller that settles through the facilitator, then stops the devchain (SIGSTOP: its RPC answers nothing) and only
 * then answers with its receipt. The caller sends SIGCONT.
 */
function settlesThenStopsTheChain(path: string) {
  const seen = { settled: null as { success: boolean; transaction: string } | null, stopped: false };
  routes.set(path, (req, res) => {
    const header = req.headers['payment-signature'];
    if (typeof header !== 'string') return challenge(res, [requirement(PRICE)]);
    void settleThroughFacilitator(header).then((result) => {
      seen.settled = result;
      // From here until pay-and-call has answered, the chain answers nothing: a read of it before the answer would hold the answer.
      process.kill(app.ctx.chain.devchain!.pid!, 'SIGSTOP');
      seen.stopped = true;
      const receipt = encodePaymentResponseHeader({ ...result, network: app.ctx.chain.network as `${string}:${string}` } as Parameters<typeof encodePaymentResponseHeader>[0]);
      res.writeHead(200, { 'payment-response': receipt, 'content-type': 'application/json' }).end('{"item":"yours"}');
    });
  });
  return seen;
}

/** What the seller's settlement through the facilitator does on chain. */
async function settleThroughFacilitator(header: string): Promise<{ success: boolean; transaction: string }> {
  const paymentPayload = decodePaymentSignatureHeader(header);
  const response = await fetch(`${app.urls.facilitator}/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ x402Version: 2, paymentPayload, paymentRequirements: paymentPayload.accepted }),
  });
  return (await response.json()) as { success: boolean; transaction: string };
}

async function usedLogTx(nonce: Hex): Promise<Hash | null> {
  const logs = await app.ctx.chain.publicClient.getContractEvents({ address: app.ctx.chain.asset.address, abi: eip3009Abi, eventName: 'AuthorizationUsed', args: { authorizer: wallet.address, nonce }, fromBlock: 0n });
  return logs[0]?.transactionHash ?? null;
}

describe('pay-and-call payments confirmed on chain', () => {
  it('refuses a challenge where one requirement exceeds maxPayment: 400, nothing signed, nothing stored, balance unchanged', async () => {
    routes.set('/mixed', (req, res) => challenge(res, [requirement(PRICE), requirement('1000')]));
    const before = await balance(wallet.address);
    const answer = await pay('/mixed', '500');
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 1000, data: { accepts: [{ amount: PRICE }, { amount: '1000' }] } });
    expect(upstream.requests.filter((r) => r.url === '/mixed').every((r) => r.headers['payment-signature'] === undefined)).toBe(true);
    expect((await call(app, 'GET', '/v1/wallets/me/payments', secret)).body.data).toEqual([]);
    expect(await balance(wallet.address)).toBe(before);
  });

  it('a seller that claims success and settles later: pending on its word, settled by the worker with the chain\'s transaction', async () => {
    let settlement: Promise<{ success: boolean; transaction: string }> | null = null;
    routes.set('/settles-late', (req, res) => {
      const header = req.headers['payment-signature'];
      if (typeof header !== 'string') return challenge(res, [requirement(PRICE)]);
      claimSuccess(res);
      settlement = new Promise((resolve) => setTimeout(resolve, 500)).then(() => settleThroughFacilitator(header));
    });
    const [payerBefore, payToBefore] = [await balance(wallet.address), await balance(payTo)];
    const answer = await pay('/settles-late');
    expect(answer.status).toBe(200);
    const payment = answer.body.data.payment;
    expect(payment).toMatchObject({ status: 'pending', transaction: null, settlement: { success: true, transaction: FAKE_TX } });

    const settled = await settlement!;
    expect(settled.success).toBe(true);
    const confirmed = await waitFor(async () => {
      const current = await paymentById(payment.id);
      return current.status === 'settled' && current;
    }, 20_000);
    const nonce = decodePaymentSignatureHeader(upstream.requests.filter((r) => r.url === '/settles-late').at(-1)!.headers['payment-signature'] as string).payload.authorization as { nonce: Hex };
    const onChain = await usedLogTx(nonce.nonce);
    expect(onChain).not.toBeNull();
    expect(confirmed).toMatchObject({ status: 'settled', transaction: onChain, error: null });
    expect(confirmed.transaction).not.toBe(FAKE_TX);
    expect(await balance(wallet.address)).toBe(payerBefore - BigInt(PRICE));
    expect(await balance(payTo)).toBe(payToBefore + BigInt(PRICE));
    const status = await reconcilerStatus();
    expect(status).toMatchObject({ settled: expect.any(Number), errors: 0 });
    expect(status.lastRunAt).toEqual(expect.any(String));
  });

  it('a seller that settles, then answers: pay-and-call answers without reading the chain first (it answers while the chain is stopped), and confirms on chain after', async () => {
    const anvil = app.ctx.chain.devchain!.pid!;
    const seller = settlesThenStopsTheChain('/settles-first');
    const settledByTheLoop = (await reconcilerStatus()).settled;
    let answer: Awaited<ReturnType<typeof pay>> | 'no answer while the chain was stopped';
    try {
      answer = await Promise.race([pay('/settles-first'), new Promise<'no answer while the chain was stopped'>((resolve) => setTimeout(() => resolve('no answer while the chain was stopped'), 5_000))]);
      expect(seller.stopped).toBe(true);
    } finally {
      process.kill(anvil, 'SIGCONT');
    }
    if (answer === 'no answer while the chain was stopped') throw new Error(answer);
    expect(answer.status).toBe(200);
    expect(answer.body.data.upstream).toMatchObject({ status: 200, body: { item: 'yours' } });
    const settled = seller.settled;
    expect(settled!.success).toBe(true);
    const payment = answer.body.data.payment;
    // The payment as recorded: pending, the seller's transaction in its receipt; `transaction` is only ever the chain's.
    expect(payment).toMatchObject({ status: 'pending', transaction: null, error: null, settlement: { success: true, transaction: settled!.transaction } });

    // Confirmed from the chain after the answer, by the request's own confirmation (the worker leaves a payment
    // touched in the last 5 s alone, and its count of payments it moved has not changed).
    const confirmed = await waitFor(async () => {
      const current = await paymentById(payment.id);
      return current.status === 'settled' && current;
    }, 20_000);
    expect(confirmed).toMatchObject({ status: 'settled', transaction: settled!.transaction, error: null });
    expect((await reconcilerStatus()).settled).toBe(settledByTheLoop);
  }, 60_000);

  it('the worker reports a chain it cannot read: the tick fails, errors and lastError are set, lag is measured', async () => {
    routes.set('/silent', (req, res) => (typeof req.headers['payment-signature'] === 'string' ? res.writeHead(200).end('ok') : challenge(res, [requirement(PRICE)])));
    const answer = await pay('/silent');
    expect(answer.body.data.payment).toMatchObject({ status: 'unknown', error: 'no PAYMENT-RESPONSE from the upstream' });
    // The same loop over the same database, reading a chain RPC that refuses connections.
    const store = new WalletsStore(app.ctx.db);
    const deadChain = { network: app.ctx.chain.network, client: createPublicClient({ transport: viemHttp(`http://127.0.0.1:${await freePort()}`, { retryCount: 0 }) }) };
    const later: Clock = { now: () => new Date(Date.now() + 60_000) };
    const loop = paymentsReconcileLoop(store, new PaymentReconciler(store, deadChain, later, app.ctx.log), app.ctx.chain.network, later, app.ctx.log, 2_000);
    await expect(loop.run(new AbortController().signal)).rejects.toThrow(/could not be checked on chain/);
    expect(loop.status()).toMatchObject({ errors: expect.any(Number), lastSuccessAt: null, lastRunAt: expect.any(String) });
    expect(loop.status().errors).toBeGreaterThanOrEqual(1);
    expect(loop.status().lastError).toEqual(expect.any(String));
    expect(loop.status().lagSeconds).toBeGreaterThanOrEqual(60);
    expect(await paymentById(answer.body.data.payment.id)).toMatchObject({ status: 'unknown' });
  });

  it('a seller that claims success and never settles: stays pending, then failed once the authorization has expired on chain; nothing moved', async () => {
    routes.set('/lies', (req, res) => (typeof req.headers['payment-signature'] === 'string' ? claimSuccess(res) : challenge(res, [requirement(PRICE)])));
    const before = await balance(wallet.address);
    const answer = await pay('/lies');
    expect(answer.status).toBe(200);
    const payment = answer.body.data.payment;
    expect(payment).toMatchObject({ status: 'pending', transaction: null, settlement: { success: true, transaction: FAKE_TX } });

    // The worker has looked at it (idle 5 s, ticks every 2 s) and left it open: the chain shows nothing.
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    expect(await paymentById(payment.id)).toMatchObject({ status: 'pending', transaction: null });

    // Signed short-lived (PAY_AND_CALL_AUTHORIZATION_SECONDS, 120 s from the chain's time, though the seller's
    // maxTimeoutSeconds is 300); just past that validBefore, the stored validBefore and the chain's time decide.
    const [stored] = await app.ctx.db.select({ validBefore: walletPayments.validBefore }).from(walletPayments).where(eq(walletPayments.id, payment.id));
    const chainNow = (await app.ctx.chain.publicClient.getBlock({ blockTag: 'latest' })).timestamp;
    expect(Number(stored!.validBefore) - Number(chainNow)).toBeGreaterThan(100);
    expect(Number(stored!.validBefore) - Number(chainNow)).toBeLessThanOrEqual(120);
    await rpc('evm_increaseTime', [Number(stored!.validBefore) - Number(chainNow) + 5]);
    await rpc('evm_mine', []);
    const ended = await waitFor(async () => {
      const current = await paymentById(payment.id);
      return current.status !== 'pending' && current;
    }, 20_000);
    expect(ended).toMatchObject({ status: 'failed', transaction: null });
    expect(ended.error).toMatch(/^authorization_expired/);
    expect(await balance(wallet.address)).toBe(before);
  }, 60_000);

  // Last in the file: it closes the wallets module, so no later payment is confirmed by its request.
  it('closing waits for a confirmation still running after its answer, then the payment is settled', async () => {
    const anvil = app.ctx.chain.devchain!.pid!;
    const seller = settlesThenStopsTheChain('/settles-before-close');
    const wallets = app.modules.find((m) => m.name === 'wallets')!;
    let closing: Promise<void> | undefined;
    let closed = false;
    let answer: Awaited<ReturnType<typeof pay>>;
    try {
      const asked = Date.now();
      answer = await pay('/settles-before-close');
      const answeredInMs = Date.now() - asked;
      expect(seller.stopped).toBe(true);
      expect(answer.body.data.payment).toMatchObject({ status: 'pending', settlement: { success: true } });
      // What close() is about to wait for, both at once so a failure shows each: the answer's own confirmation still
      // running, held by the stopped chain (a chain read gives up after 2 × 10 s, so the answer's time is said too).
      const before = { confirmationsRunning: (await reconcilerStatus()).confirmationsRunning, chain: processState(anvil) };
      expect(before, `answered in ${answeredInMs} ms`).toEqual({ confirmationsRunning: 1, chain: 'stopped' });
      closing = wallets.close!().then(() => void (closed = true));
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect({ closed, chain: processState(anvil) }).toEqual({ closed: false, chain: 'stopped' });
    } finally {
      process.kill(anvil, 'SIGCONT');
    }
    await closing;
    // Done once close() is: the confirmation it waited for settled the payment, no worker involved.
    expect(await paymentById(answer.body.data.payment.id)).toMatchObject({ status: 'settled', transaction: seller.settled!.transaction });
    expect((await reconcilerStatus()).confirmationsRunning).toBe(0);
  }, 60_000);
});

/** What the admin command `wallet.payments-reconciler` shows. */
const reconcilerStatus = async () =>
  (await app.modules.flatMap((m) => Object.entries(m.adminCommands ?? {})).find(([name]) => name === 'wallet.payments-reconciler')![1]({})) as Record<string, unknown> & { settled: number; confirmationsRunning: number };

/** Whether a process is stopped (SIGSTOP), from its state letter in /proc (Linux). */
function processState(pid: number): 'stopped' | 'running' | 'gone' {
  let stat = '';
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return 'gone';
  }
  const state = /\) (\S)/.exec(stat)?.[1];
  return state === 'T' ? 'stopped' : state === 'Z' || state === 'X' || state === undefined ? 'gone' : 'running';
}

async function rpc(method: string, params: unknown[]) {
  const response = await fetch(app.ctx.chain.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const body = (await response.json()) as { error?: unknown };
  if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
}

