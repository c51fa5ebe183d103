// Crash points of deposit sweeps and refunds (issue 45): the real `tollgate serve` SIGKILLed while it sweeps a
// deposit address on to the merchant, or while it refunds a payer, then restarted on the same data. Each point must
// end with the money moved exactly once: the merchant holds the deposit and the deposit address nothing; the payer
// is refunded once and the refund is succeeded. The harness (test/crash/harness.ts) says how instances run.
import { createPublicClient, createWalletClient, defineChain, erc20Abi, http, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { readPaymentRequired, signPayment } from '../../src/x402/client.js';
import { admin, chainRpc, crashHarness, eventually, freshData, sendThroughCrash, serve, stop, transferEvent, USDG, type Instance } from './harness.js';

const { pointDone } = crashHarness('crash-points deposits and refunds');
// Reconcile a sweep or refund left open one second after it was; expire the lease of a dead call's Idempotency-Key fast.
const env = { INTENT_RECONCILE_GRACE_SECONDS: '1', IDEMPOTENCY_LEASE_SECONDS: '2' };

const json = async (response: Promise<Response>) => {
  const answer = await response;
  const body = (await answer.json()) as Record<string, any>;
  if (!answer.ok) throw new Error(`${answer.status} ${JSON.stringify(body)}`);
  return body;
};

function chainOf(rpc: string) {
  const chain = defineChain({ id: 4663, name: 'devchain', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [rpc] } } });
  return { chain, client: createPublicClient({ chain, transport: http(rpc) }) };
}
const balance = (rpc: string, address: Address) => chainOf(rpc).client.readContract({ address: USDG, abi: erc20Abi, functionName: 'balanceOf', args: [address] });
const transfers = (rpc: string, from: Address, to: Address) => chainOf(rpc).client.getLogs({ address: USDG, event: transferEvent, args: { from, to }, fromBlock: 0n });

/** A signed-in merchant with a project, a merchant paying to a fresh address, and its API key. */
async function shopOn(instance: Instance, dataDir: string) {
  const { token } = await admin(dataDir, 'dev.token', { sub: 'crash-deposits' });
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const project = await json(fetch(`${instance.api}/v1/projects`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'crash' }) }));
  const payTo = privateKeyToAccount(generatePrivateKey()).address;
  const merchant = await json(fetch(`${instance.api}/v1/projects/${project.data.project.id}/merchants`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'm', payTo }) }));
  const key = { authorization: `Bearer ${project.data.apiKey.secret}`, 'content-type': 'application/json' };
  return { auth, key, projectId: project.data.project.id as string, merchantId: merchant.data.id as string, payTo };
}

describe('crash points', () => {
  it.each(['sweep.after-record', 'sweep.after-settle'] as const)('a sweep killed at %s: after the restart the merchant holds the deposit once, the deposit address nothing', async (point) => {
    const data = await freshData();
    const first = await serve(data, point, env);
    const shop = await shopOn(first, data.dataDir);
    const intent = await json(fetch(`${first.api}/v1/payment-intents`, { method: 'POST', headers: shop.key, body: JSON.stringify({ merchantId: shop.merchantId, amountUsdCents: 250, externalId: 'deposit-order' }) }));
    const view = await json(fetch(`${first.api}/v1/payment-intents/${intent.id}/checkout`));
    const deposit = view.deposit.address as Address;
    // A fresh key pays with a plain transfer: the worker credits it, then dies sweeping it.
    const payer = privateKeyToAccount(generatePrivateKey());
    await admin(data.dataDir, 'dev.fund', { address: payer.address, amount: '5' });
    const { chain } = chainOf(first.rpc);
    await createWalletClient({ account: payer, chain, transport: http(first.rpc) }).writeContract({ address: USDG, abi: erc20Abi, functionName: 'transfer', args: [deposit, 2_500_000n], gas: 100_000n });
    expect(await Promise.race([first.exited, new Promise((resolve) => setTimeout(() => resolve('alive'), 30_000))])).toBe(137);

    const second = await serve(data, undefined, env);
    try {
      // after-record: the recorded sweep was never signed; it is known dead once the chain passes its validBefore
      // (60 s), then swept anew. The chain's clock is moved past it rather than waited for.
      await chainRpc(second.rpc, 'evm_increaseTime', [61]);
      await chainRpc(second.rpc, 'evm_mine', []);
      const done = await eventually(async () => (await balance(second.rpc, shop.payTo)) === 2_500_000n && (await balance(second.rpc, deposit)) === 0n, 160_000);
      expect(done, `payTo ${await balance(second.rpc, shop.payTo)}, deposit ${await balance(second.rpc, deposit)}`).toBe(true);
      expect(await transfers(second.rpc, deposit, shop.payTo)).toHaveLength(1);
      const current = await json(fetch(`${second.api}/v1/payment-intents/${intent.id}`, { headers: shop.key }));
      expect(current).toMatchObject({ status: 'settled', paidVia: 'deposit', receivedUsdCents: 250 });
    } finally {
      await stop(second);
    }
    pointDone();
  }, 240_000);

  it.each(['refund.after-record', 'refund.after-send'] as const)('a refund killed at %s: after the restart the payer is paid back once and the refund succeeded', async (point) => {
    const data = await freshData();
    const first = await serve(data, point, env);
    const shop = await shopOn(first, data.dataDir);
    // The refund wallet: a Tollgate wallet of a management credential, funded, named by the project's owner.
    const { secret: mgmt } = await admin(data.dataDir, 'mgmt-credential.create', { name: 'refunds' });
    const created = await json(fetch(`${first.api}/v1/wallets`, { method: 'POST', headers: { authorization: `Bearer ${mgmt}`, 'content-type': 'application/json' }, body: JSON.stringify({ externalId: 'refunds', name: 'refunds' }) }));
    const wallet = created.data.wallet as { id: string; address: Address };
    await admin(data.dataDir, 'dev.fund', { address: wallet.address, amount: '10' });
    await json(fetch(`${first.api}/v1/projects/${shop.projectId}`, { method: 'PATCH', headers: shop.auth, body: JSON.stringify({ refundWalletId: wallet.id, refundWalletCredential: created.data.credential.secret }) }));
    // An intent paid over x402.
    const intent = await json(fetch(`${first.api}/v1/payment-intents`, { method: 'POST', headers: shop.key, body: JSON.stringify({ merchantId: shop.merchantId, amountUsdCents: 300, externalId: 'refund-order' }) }));
    const payer = privateKeyToAccount(generatePrivateKey());
    await admin(data.dataDir, 'dev.fund', { address: payer.address, amount: '5' });
    const payUrl = `${first.api}/v1/payment-intents/${intent.id}/pay`;
    const asked = await fetch(payUrl, { method: 'POST' });
    const { header } = await signPayment(payer, readPaymentRequired((n) => asked.headers.get(n), await asked.json()));
    expect((await fetch(payUrl, { method: 'POST', headers: { 'payment-signature': header } })).status).toBe(200);

    const refund = (instance: Instance) =>
      fetch(`${instance.api}/v1/payment-intents/${intent.id}/refunds`, { method: 'POST', headers: { ...shop.key, 'idempotency-key': 'crash-refund-1' }, body: JSON.stringify({ amountUsdCents: 300 }) });
    expect(await sendThroughCrash(first, () => refund(first))).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data, undefined, env);
    try {
      const list = async () => (await json(fetch(`${second.api}/v1/payment-intents/${intent.id}/refunds`, { headers: shop.key }))) as unknown as Array<{ id: string; status: string }>;
      const succeeded = await eventually(async () => (await list()).find((r) => r.status === 'succeeded'), 30_000);
      expect(succeeded, JSON.stringify(await list())).toBeTruthy();
      expect(await list()).toHaveLength(1);
      // The caller's retry with its key answers that refund, and pays nothing more.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const retried = await refund(second);
      expect(retried.status).toBe(201);
      expect(((await retried.json()) as { id: string }).id).toBe(succeeded!.id);
      expect((await transfers(second.rpc, wallet.address, payer.address)).map((log) => log.args.value)).toEqual([3_000_000n]);
      expect(await json(fetch(`${second.api}/v1/payment-intents/${intent.id}`, { headers: shop.key }))).toMatchObject({ refundedUsdCents: 300 });
    } finally {
      await stop(second);
    }
    pointDone();
  }, 180_000);
});
