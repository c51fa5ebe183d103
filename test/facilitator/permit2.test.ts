// `exact` over Permit2 through our facilitator, paid by the official @x402/evm client (ExactEvmScheme with
// assetTransferMethod permit2): verified, settled once through x402ExactPermit2Proxy, judged by the Transfer
// paired with the proxy's Settled event, under its own gas ceiling, with the balances read from the chain.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HTTPFacilitatorClient } from '@x402/core/server';
import type { SettleResponse, SupportedResponse, VerifyResponse } from '@x402/core/types';
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch';
import { x402Client, x402HTTPClient } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import express from 'express';
import { createWalletClient, encodeFunctionData, http } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aggregate3Abi, MULTICALL3_ADDRESS } from '../../src/chain/multicall3.js';
import { EXACT_PERMIT2_PROXY } from '../../src/chain/x402-contracts.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { fundedPayer, randomAddress } from '../x402/support.js';
import { post } from './support.js';
import { gasOf, NETWORK, officialPayment, permit2Payer, permit2Requirements, permitNonce, relayerState, signPermit, transfersTo } from './permit2-support.js';

const PERMIT2_CEILING = 160_000n;
let app: TestApp;
const usdg = () => app.ctx.chain.devchain!;

beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => app?.close());

const settle = (payload: unknown, requirements: unknown) => post<SettleResponse>(app, 'settle', payload, requirements);
const verify = (payload: unknown, requirements: unknown) => post<VerifyResponse>(app, 'verify', payload, requirements);

describe('/supported', () => {
  it('lists exact (EIP-3009 and Permit2 payloads), upto and batch-settlement on eip155:4663', async () => {
    const supported = (await (await fetch(`${app.urls.facilitator}/supported`)).json()) as SupportedResponse;
    const kinds = supported.kinds.map((k) => `${k.scheme}@${k.network}`);
    expect(kinds).toEqual(expect.arrayContaining(['exact@eip155:4663', 'upto@eip155:4663', 'batch-settlement@eip155:4663']));
    // upto: the relayer a payer must name as its facilitator (the proxy accepts the settle from it alone).
    const upto = supported.kinds.find((k) => k.scheme === 'upto')!;
    expect(app.ctx.chain.relayers.map((r) => r.address)).toContain((upto.extra as { facilitatorAddress: string }).facilitatorAddress);
  });
});

describe('exact over Permit2, paid by the official client', () => {
  it('verifies and settles once: payer −price, payee +price, the relayer pays the gas under the Permit2 ceiling', async () => {
    const payer = await permit2Payer(app, '1');
    const payTo = randomAddress();
    const requirements = permit2Requirements(app, 'exact', '2500', payTo);
    const payload = await officialPayment(payer, requirements);
    expect(payload.payload).toHaveProperty('permit2Authorization');

    expect((await verify(payload, requirements)).body).toEqual({ isValid: true, payer: payer.address });
    const [payerBefore, relayerBefore] = [await usdg().balanceOf(payer.address), await relayerState(app)];
    const { status, body } = await settle(payload, requirements);
    expect(status).toBe(200);
    expect(body).toMatchObject({ success: true, payer: payer.address, network: NETWORK });

    // The chain: exactly the price moved, once, by one relayer transaction to the exact proxy.
    expect(payerBefore - (await usdg().balanceOf(payer.address))).toBe(2500n);
    expect(await usdg().balanceOf(payTo)).toBe(2500n);
    expect(await transfersTo(app, payer.address, payTo)).toEqual([{ tx: body.transaction, value: 2500n }]);
    const relayerAfter = await relayerState(app);
    expect(relayerAfter.sent - relayerBefore.sent).toBe(1);
    const gas = await gasOf(app, body.transaction as `0x${string}`);
    expect(gas.to).toBe(EXACT_PERMIT2_PROXY);
    expect(app.ctx.chain.relayers.map((r) => r.address)).toContain(gas.from);
    expect(gas.limit).toBeLessThanOrEqual(PERMIT2_CEILING);
    expect(relayerBefore.wei - relayerAfter.wei).toBe(gas.cost);
    // What the ceiling is measured against (docs/facilitator.md): a new payee's balance slot included.
    console.log(`exact over Permit2: ${gas.used} gas used, limit ${gas.limit}`);
  });

  it('a settle of a settled permit is refused with its transaction; eight concurrent copies buy one success', async () => {
    const payer = await permit2Payer(app, '1');
    const payTo = randomAddress();
    const requirements = permit2Requirements(app, 'exact', '1000', payTo);
    const payload = await officialPayment(payer, requirements);
    const answers = await Promise.all(Array.from({ length: 8 }, () => settle(payload, requirements)));
    const wins = answers.filter((a) => a.body.success);
    expect(wins).toHaveLength(1);
    for (const loss of answers.filter((a) => !a.body.success)) expect(loss.body).toMatchObject({ errorReason: 'permit2_invalid_nonce' });
    expect(await transfersTo(app, payer.address, payTo)).toHaveLength(1);
    const late = await settle(payload, requirements);
    expect(late.body).toMatchObject({ success: false, errorReason: 'permit2_invalid_nonce', transaction: wins[0]!.body.transaction });
    expect((await verify(payload, requirements)).body).toMatchObject({ isValid: false, invalidReason: 'permit2_invalid_nonce' });
  });

  it('a payer that has not approved Permit2 is named at verify and costs no send at settle', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = permit2Requirements(app, 'exact', '1000', randomAddress());
    const payload = await officialPayment(payer, requirements);
    expect((await verify(payload, requirements)).body).toMatchObject({ isValid: false, invalidReason: 'permit2_allowance_required' });
    const before = await relayerState(app);
    expect((await settle(payload, requirements)).body).toMatchObject({ success: false, errorReason: 'permit2_allowance_required' });
    expect((await relayerState(app)).sent).toBe(before.sent);
  });

  it('a permit for another payee, another amount or signed by someone else is refused before anything is sent', async () => {
    const payer = await permit2Payer(app, '1');
    const requirements = permit2Requirements(app, 'exact', '1000', randomAddress());
    const before = await relayerState(app);
    const forged = await signPermit(payer, requirements, { signer: await fundedPayer(app, '0') });
    expect((await settle(forged, requirements)).body).toMatchObject({ success: false, errorReason: 'invalid_permit2_signature' });
    const elsewhere = await signPermit(payer, requirements, { to: randomAddress() });
    expect((await settle(elsewhere, requirements)).body).toMatchObject({ success: false, errorReason: 'invalid_permit2_recipient_mismatch' });
    const cheaper = await signPermit(payer, requirements, { amount: 999n });
    expect((await settle(cheaper, requirements)).body).toMatchObject({ success: false, errorReason: 'permit2_amount_mismatch' });
    const tenYears = await signPermit(payer, requirements, { deadline: BigInt(Math.floor(Date.now() / 1000)) + 315_360_000n });
    expect((await settle(tenYears, requirements)).body).toMatchObject({ success: false, errorReason: 'permit2_deadline_expired' });
    expect((await relayerState(app)).sent).toBe(before.sent);
  });

  it('a permit someone else executed first (the payer, from the mempool) is paid by that transaction, answered once, nothing sent', async () => {
    const payer = await permit2Payer(app, '1');
    const payTo = randomAddress();
    const requirements = permit2Requirements(app, 'exact', '1000', payTo);
    const payload = await officialPayment(payer, requirements);
    // A third party submits the signed permit to the proxy itself.
    const thirdParty = await fundedPayer(app, '0');
    const auth = (payload.payload as { permit2Authorization: Record<string, any>; signature: `0x${string}` }).permit2Authorization;
    const wallet = createWalletClient({ account: thirdParty, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
    const { x402ExactPermit2ProxyABI } = await import('@x402/evm');
    const hash = await wallet.writeContract({
      address: EXACT_PERMIT2_PROXY,
      abi: x402ExactPermit2ProxyABI,
      functionName: 'settle',
      args: [
        { permitted: { token: auth.permitted.token, amount: BigInt(auth.permitted.amount) }, nonce: BigInt(auth.nonce), deadline: BigInt(auth.deadline) },
        payer.address,
        { to: auth.witness.to, validAfter: 0n },
        (payload.payload as { signature: `0x${string}` }).signature,
      ],
    });
    await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash });
    const before = await relayerState(app);
    expect((await settle(payload, requirements)).body).toMatchObject({ success: true, transaction: hash });
    expect((await settle(payload, requirements)).body).toMatchObject({ success: false, errorReason: 'permit2_invalid_nonce', transaction: hash });
    expect((await relayerState(app)).sent).toBe(before.sent);
    expect(await transfersTo(app, payer.address, payTo)).toHaveLength(1);
  });

  it('a permit a third party executed through a wrapper (Multicall3) first is paid by that transaction, answered once, nothing sent', async () => {
    const payer = await permit2Payer(app, '1');
    const payTo = randomAddress();
    const requirements = permit2Requirements(app, 'exact', '1000', payTo);
    const payload = await officialPayment(payer, requirements);
    // The permit from the mempool, its proxy call wrapped in Multicall3: the transaction's own calldata names no permit.
    const auth = (payload.payload as { permit2Authorization: Record<string, any>; signature: `0x${string}` }).permit2Authorization;
    const { x402ExactPermit2ProxyABI } = await import('@x402/evm');
    const callData = encodeFunctionData({
      abi: x402ExactPermit2ProxyABI,
      functionName: 'settle',
      args: [
        { permitted: { token: auth.permitted.token, amount: BigInt(auth.permitted.amount) }, nonce: BigInt(auth.nonce), deadline: BigInt(auth.deadline) },
        payer.address,
        { to: auth.witness.to, validAfter: 0n },
        (payload.payload as { signature: `0x${string}` }).signature,
      ],
    });
    const wallet = createWalletClient({ account: await fundedPayer(app, '0'), chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
    const hash = await wallet.writeContract({ address: MULTICALL3_ADDRESS, abi: aggregate3Abi, functionName: 'aggregate3', args: [[{ target: EXACT_PERMIT2_PROXY, allowFailure: false, callData }]] });
    expect((await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash })).status).toBe('success');
    expect(await transfersTo(app, payer.address, payTo)).toHaveLength(1);
    const before = await relayerState(app);
    // The seller was paid: its settle is answered success with that transaction (once), never "nonce used".
    expect((await settle(payload, requirements)).body).toMatchObject({ success: true, transaction: hash });
    expect((await settle(payload, requirements)).body).toMatchObject({ success: false, errorReason: 'permit2_invalid_nonce', transaction: hash });
    expect((await relayerState(app)).sent).toBe(before.sent);
  });

  it("a permit whose nonce the payer spent on another payee is refused: that transfer paid something else", async () => {
    const payer = await permit2Payer(app, '1');
    const payTo = randomAddress();
    const requirements = permit2Requirements(app, 'exact', '1000', payTo);
    const payload = await signPermit(payer, requirements);
    // Same nonce, same amount, to the payer's own other address: executed first.
    const decoy = permit2Requirements(app, 'exact', '1000', randomAddress());
    const spent = await signPermit(payer, decoy, { nonce: permitNonce(payload) });
    expect((await settle(spent, decoy)).body).toMatchObject({ success: true });
    expect((await settle(payload, requirements)).body).toMatchObject({ success: false, errorReason: 'permit2_invalid_nonce' });
    expect(await transfersTo(app, payer.address, payTo)).toHaveLength(0);
  });
});

describe('the official @x402/express seller and @x402/fetch over Permit2', () => {
  let seller: { url: string; close(): Promise<void> };
  let served = 0;
  const payTo = randomAddress();
  beforeAll(async () => {
    const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: app.urls.facilitator })).register(NETWORK, new ExactEvmServerScheme());
    const price = { amount: '1000', asset: app.ctx.chain.asset.address, extra: { name: 'Global Dollar', version: '1', assetTransferMethod: 'permit2' } };
    const server = express();
    server.use(paymentMiddleware({ 'GET /report': { accepts: { scheme: 'exact', network: NETWORK, payTo, price }, description: 'one report' } } as never, resourceServer));
    server.get('/report', (_req, res) => {
      served += 1;
      res.json({ report: served });
    });
    const listener: Server = await new Promise((resolve) => {
      const s = server.listen(0, '127.0.0.1', () => resolve(s));
    });
    seller = { url: `http://127.0.0.1:${(listener.address() as AddressInfo).port}`, close: () => new Promise((r) => listener.close(() => r())) };
  });
  afterAll(async () => seller?.close());

  it('pays once per call; a copy of a paid request buys nothing', async () => {
    const payer = await permit2Payer(app, '1');
    const client = x402Client.fromConfig({
      schemes: [{ network: NETWORK, client: new ExactEvmScheme(payer) }],
      spendControls: { allowedAssets: [{ network: NETWORK, asset: app.ctx.chain.asset.address, maxAmountPerPayment: '1000' }] },
    });
    const httpClient = new x402HTTPClient(client);
    const pay = wrapFetchWithPayment(fetch, httpClient);
    const [a, b] = [await pay(`${seller.url}/report`), await pay(`${seller.url}/report`)];
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(decodePaymentResponseHeader(a.headers.get('payment-response')!)).toMatchObject({ success: true, payer: payer.address });
    expect(await usdg().balanceOf(payTo)).toBe(2000n);
    // The same signed payment sent again: refused, nothing served, nothing moved.
    const first = await fetch(`${seller.url}/report`);
    const required = httpClient.getPaymentRequiredResponse((name) => first.headers.get(name), await first.json());
    const payload = await httpClient.createPaymentPayload(required);
    const headers = httpClient.encodePaymentSignatureHeader(payload);
    const copies = await Promise.all(Array.from({ length: 4 }, () => fetch(`${seller.url}/report`, { headers })));
    expect(copies.map((c) => c.status).sort()).toEqual([200, 402, 402, 402]);
    expect(await usdg().balanceOf(payTo)).toBe(3000n);
  });
});
