// The embedded devchain never goes stale: anvil mines only when a transaction arrives, so after a
// long idle its latest block is far behind the wall clock. A client that signs `validAfter = now - 600`
// (x402 v1 clients and other SDKs do; @x402/evm 2.27's v2 client signs 0) is then refused by the
// token. And the time window is judged by the chain's clock, each side named (`valid_after` /
// `valid_before`), not as a failed simulation.
import type { PaymentRequirements } from '@x402/core/types';
import { wrapFetchWithPayment } from '@x402/fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPayer } from '../../templates/paid-server/test/helpers.js';
import { post, requirementsFor } from '../facilitator/support.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { balanceOf, fundedPayer, relayerTxCount, signAuthorization } from './support.js';

const nowSeconds = () => Math.floor(Date.now() / 1000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function rpc(app: TestApp, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(app.ctx.chain.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

const latestBlockTime = async (app: TestApp) => Number((await app.ctx.chain.publicClient.getBlock({ blockTag: 'latest' })).timestamp);

/** Sets the chain's clock (anvil keeps it from there: later blocks follow at that offset) and mines a block at it. */
async function setChainClock(app: TestApp, seconds: number): Promise<void> {
  await rpc(app, 'anvil_setTime', [seconds]);
  await rpc(app, 'evm_mine', []);
  // The facilitator reads the chain's time at most once a second: let it see the new clock.
  await sleep(1_100);
}

describe('a devchain whose clock fell an hour behind', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await buildTestApp();
  });
  afterAll(async () => app?.close());

  it('verifies and settles a payment signed with validAfter = now - 600', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    await setChainClock(app, nowSeconds() - 3600);
    const payload = await signAuthorization(payer, requirements, { validAfter: BigInt(nowSeconds() - 600) });
    expect((await post(app, 'verify', payload, requirements)).body).toEqual({ isValid: true, payer: payer.address });
    expect((await post(app, 'settle', payload, requirements)).body).toMatchObject({ success: true, payer: payer.address });
    expect(await balanceOf(app, payer.address)).toBe(1_000_000n - 100n);
  });

  it('still verifies and settles an official @x402/fetch payment to /x402-test/ping', async () => {
    const payer = testPayer();
    await app.ctx.chain.devchain!.fund(payer.account.address, '1');
    // What an hour of idleness looks like: the latest block an hour old (and anvil's clock with it).
    await setChainClock(app, nowSeconds() - 3600);
    expect(nowSeconds() - (await latestBlockTime(app))).toBeGreaterThanOrEqual(3590);

    const pay = wrapFetchWithPayment(fetch, payer.http);
    const paid = await pay(`${app.urls.api}/x402-test/ping`);
    expect(paid.status, await paid.clone().text()).toBe(200);
    expect(await paid.json()).toEqual({ message: 'paid pong' });
    expect(await balanceOf(app, payer.account.address)).toBe(1_000_000n - 100n);
    // The chain is back on the wall clock.
    expect(Math.abs(nowSeconds() - (await latestBlockTime(app)))).toBeLessThan(10);
  });
});

describe('the time window by the chain clock', () => {
  let app: TestApp;
  let requirements: PaymentRequirements;
  beforeAll(async () => {
    app = await buildTestApp();
    requirements = requirementsFor(app);
  });
  afterAll(async () => app?.close());

  // Last in this app: the chain's clock never goes back.
  it('each side named: not valid yet → valid_after; a chain an hour ahead of the signer → valid_before, nothing sent', async () => {
    const payer = await fundedPayer(app, '1');
    const early = await signAuthorization(payer, requirements, { validAfter: BigInt(nowSeconds() + 120) });
    expect((await post(app, 'verify', early, requirements)).body).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_evm_payload_authorization_valid_after' });

    const payload = await signAuthorization(payer, requirements); // validBefore = now + 300 by the wall clock
    await setChainClock(app, nowSeconds() + 3600);
    const verified = await post(app, 'verify', payload, requirements);
    expect(verified.body).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_evm_payload_authorization_valid_before' });
    expect((verified.body as { invalidMessage: string }).invalidMessage).toMatch(/chain's time/);
    const relayer = app.ctx.chain.relayer!.address;
    const txCount = await relayerTxCount(app, relayer);
    const settled = await post(app, 'settle', payload, requirements);
    expect(settled.body).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_payload_authorization_valid_before', transaction: '' });
    expect(await relayerTxCount(app, relayer)).toBe(txCount);
    expect(await balanceOf(app, payer.address)).toBe(1_000_000n);
  });
});
