import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFunctionData, erc20Abi, getAddress, type Address, type Hash } from 'viem';
import { PERMIT2_ADDRESS } from '../../src/chain/x402-contracts.js';
import { APPROVE_GAS_CEILING } from '../../src/modules/wallets/permit2-approval.js';
import type { TestApp } from '../helpers/test-app.js';
import { buildWalletsApp, call, freePort, type Call } from './helpers.js';
import { rpcCall } from '../../src/chain/rpc.js';

// POST /v1/wallets/me/permit2-approval on the devchain: the wallet sends approve(Permit2, amount) itself (paying the
// gas), once per Idempotency-Key; then an `upto` pay-and-call, refused before, goes through. Everything is read
// from the chain: the allowance, the transaction's sender, target and gas limit, the wallet's nonce.

let app: TestApp;
let mgmt: string;
const chain = () => app.ctx.chain;
const max = () => ({ network: chain().network, asset: chain().asset.address, amount: '10000' });

interface Agent {
  id: string;
  address: Address;
  secret: string;
}

async function agent(name: string): Promise<Agent> {
  const created = await call(app, 'POST', '/v1/wallets', mgmt, { externalId: name, name });
  const { id, address } = created.body.data.wallet;
  // USDG and gas (the devchain's fund tops up the native coin too).
  await chain().devchain!.fund(address, '1');
  const credential = await call(app, 'POST', `/v1/wallets/${id}/credentials`, mgmt, { name: 'runtime' });
  return { id, address: getAddress(address), secret: credential.body.data.secret };
}

async function approve(secret: string, amount: string, key?: string): Promise<Call & { replayed: boolean }> {
  const response = await app.origins.api!.inject({
    method: 'POST',
    url: '/v1/wallets/me/permit2-approval',
    headers: { authorization: `Bearer ${secret}`, ...(key ? { 'idempotency-key': key } : {}) },
    payload: { amount },
  });
  return { status: response.statusCode, body: response.json(), replayed: response.headers['idempotent-replayed'] === 'true' };
}

const allowance = (owner: Address) => chain().publicClient.readContract({ address: chain().asset.address, abi: erc20Abi, functionName: 'allowance', args: [owner, PERMIT2_ADDRESS] });
const sent = (address: Address) => chain().publicClient.getTransactionCount({ address });
const payMetered = (a: Agent) => call(app, 'POST', '/v1/wallets/me/pay-and-call', a.secret, { url: `${app.urls.api}/x402-test/metered`, maxPayment: max() });

const rpc = (method: string, params: unknown[]) => rpcCall(chain().rpcUrl, method, params);

beforeAll(async () => {
  const apiPort = await freePort();
  app = await buildWalletsApp({ env: { API_PORT: String(apiPort), PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${apiPort},127.0.0.1` } });
  mgmt = await app.mgmtSecret('permit2-approval');
});
afterAll(async () => app?.close());

describe('POST /v1/wallets/me/permit2-approval', () => {
  it('approves Permit2 on chain from the wallet, once per key; then an upto pay-and-call, refused before, goes through', async () => {
    const a = await agent('approve-1');
    const refused = await payMetered(a);
    expect(refused.status).toBe(409);
    expect(refused.body.data).toMatchObject({ reason: 'permit2_not_approved', allowance: '0' });
    expect(refused.body.message).toMatch(/POST \/v1\/wallets\/me\/permit2-approval/);

    const first = await approve(a.secret, '1000000', 'approve-key-0001');
    expect(first.status).toBe(200);
    expect(first.replayed).toBe(false);
    expect(first.body.data).toMatchObject({ network: chain().network, asset: chain().asset.address, spender: PERMIT2_ADDRESS, amount: '1000000', status: 'confirmed', allowance: '1000000' });
    const hash = first.body.data.transaction as Hash;
    // The chain: the wallet sent it, to the token, under the ceiling decided before sending; the allowance is set.
    const [tx, receipt] = await Promise.all([chain().publicClient.getTransaction({ hash }), chain().publicClient.getTransactionReceipt({ hash })]);
    expect(receipt.status).toBe('success');
    expect(getAddress(tx.from)).toBe(a.address);
    expect(getAddress(tx.to!)).toBe(getAddress(chain().asset.address));
    expect(tx.gas).toBe(BigInt(first.body.data.gasLimit));
    expect(tx.gas).toBeLessThanOrEqual(APPROVE_GAS_CEILING);
    expect(receipt.gasUsed).toBeLessThanOrEqual(tx.gas);
    expect(await allowance(a.address)).toBe(1_000_000n);
    expect(await sent(a.address)).toBe(1);

    // The same key again: the first answer, nothing sent. The same key for another amount: a conflict, nothing sent.
    const again = await approve(a.secret, '1000000', 'approve-key-0001');
    expect(again).toMatchObject({ status: 200, replayed: true, body: first.body });
    const other = await approve(a.secret, '5', 'approve-key-0001');
    expect(other.status).toBe(409);
    expect(await sent(a.address)).toBe(1);
    // A new key for the allowance it already has: nothing to send.
    const unchanged = await approve(a.secret, '1000000', 'approve-key-0002');
    expect(unchanged).toMatchObject({ status: 200, body: { data: { status: 'unchanged', transaction: null, gasLimit: null, allowance: '1000000' } } });
    expect(await sent(a.address)).toBe(1);

    const paid = await payMetered(a);
    expect(paid.status).toBe(200);
    expect(paid.body.data.payment).toMatchObject({ scheme: 'upto' });
    expect(['pending', 'settled']).toContain(paid.body.data.payment.status);
  }, 60_000);

  it('a wallet without gas for the worst case: 409 insufficient_gas, nothing signed or sent, the allowance unchanged', async () => {
    const a = await agent('approve-2');
    await rpc('anvil_setBalance', [a.address, '0x1']);
    const answer = await approve(a.secret, '1000000', 'approve-key-0003');
    expect(answer.status).toBe(409);
    expect(answer.body.data).toMatchObject({ reason: 'insufficient_gas', balance: '1' });
    expect(BigInt(answer.body.data.required)).toBeGreaterThan(1n);
    expect(await sent(a.address)).toBe(0);
    expect(await allowance(a.address)).toBe(0n);
  });

  it('an approval replaced at its nonce by another of the wallet (a higher fee, another node) is 409 approval_replaced, never confirmed', async () => {
    const a = await agent('approve-4');
    await rpc('evm_setAutomine', [false]);
    try {
      const answer = approve(a.secret, '1000000', 'approve-key-0008');
      // Ours waits in the pool at nonce 0; the wallet's other transaction takes that nonce at twice the fee.
      await expect.poll(() => chain().publicClient.getTransactionCount({ address: a.address, blockTag: 'pending' }), { timeout: 15_000 }).toBe(1);
      const [ours] = (await rpc('eth_getBlockByNumber', ['pending', true]) as { transactions: Array<{ hash: Hash; from: string; maxFeePerGas: string }> }).transactions.filter((t) => getAddress(t.from) === a.address);
      await rpc('anvil_impersonateAccount', [a.address]);
      const data = encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [PERMIT2_ADDRESS, 7n] });
      const fee = `0x${(BigInt(ours!.maxFeePerGas) * 2n).toString(16)}`;
      const replacement = (await rpc('eth_sendTransaction', [{ from: a.address, to: chain().asset.address, data, nonce: '0x0', gas: '0x186a0', maxFeePerGas: fee, maxPriorityFeePerGas: fee }])) as Hash;
      await rpc('anvil_stopImpersonatingAccount', [a.address]);
      await rpc('evm_mine', []);
      const replaced = await answer;
      expect(replaced.status).toBe(409);
      expect(replaced.body.data).toMatchObject({ reason: 'approval_replaced', transaction: ours!.hash, replacedBy: replacement });
      // The chain: the replacement was mined, ours never was; the key keeps its answer.
      expect(await chain().publicClient.getTransactionReceipt({ hash: ours!.hash }).catch(() => null)).toBeNull();
      expect(await allowance(a.address)).toBe(7n);
      expect(await approve(a.secret, '1000000', 'approve-key-0008')).toMatchObject({ status: 409, replayed: true });
      expect(await sent(a.address)).toBe(1);
    } finally {
      await rpc('evm_setAutomine', [true]);
    }
  }, 60_000);

  it('refuses a call without an Idempotency-Key, a bad amount, and the management credential', async () => {
    const a = await agent('approve-3');
    expect((await approve(a.secret, '1000000')).body).toMatchObject({ code: 1000, data: { reason: 'idempotency_key_required' } });
    expect((await approve(a.secret, '1000000')).status).toBe(400);
    expect((await approve(a.secret, '-1', 'approve-key-0004')).status).toBe(400);
    expect((await approve(a.secret, 'all', 'approve-key-0007')).status).toBe(400);
    expect((await approve(a.secret, (2n ** 256n).toString(), 'approve-key-0005')).status).toBe(400);
    expect((await approve(mgmt, '1000000', 'approve-key-0006')).status).toBe(401);
    expect(await sent(a.address)).toBe(0);
  });
});
