import type { PaymentRequirements } from '@x402/core/types';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { x402UptoPermit2ProxyABI } from '@x402/evm';
import { createWalletClient, encodeFunctionData, http, parseAbi, type Address, type Hash, type Hex } from 'viem';
import { aggregate3Abi, MULTICALL3_ADDRESS } from '../../src/chain/multicall3.js';
import { PERMIT2_ADDRESS, UPTO_PERMIT2_PROXY } from '../../src/chain/x402-contracts.js';
import { UNKNOWN_AMOUNT_NOTE, UNREADABLE_SETTLEMENT_GRACE_SECONDS } from '../../src/modules/wallets/reconcile-upto.js';
import type { TestApp } from '../helpers/test-app.js';
import { transfersTo } from '../facilitator/permit2-support.js';
import { fundedPayer, randomAddress } from '../x402/support.js';
import { buildWalletsApp, call, freePort, startUpstream, waitFor, type Upstream } from './helpers.js';
import { rpcCall } from '../../src/chain/rpc.js';

// pay-and-call of `upto` on the devchain: the wallet permits the maximum through Permit2, the seller settles its use
// through our facilitator; the wallet's policy reserves the maximum and books what the chain moved.

const erc20 = parseAbi(['function approve(address spender, uint256 value) returns (bool)']);
let app: TestApp;
let mgmt: string;
const usdg = () => app.ctx.chain.devchain!;
const max = () => ({ network: app.ctx.chain.network, asset: app.ctx.chain.asset.address, amount: '10000' });

interface Agent {
  id: string;
  address: Address;
  secret: string;
}
const pay = (agent: Agent, url: string, body: Record<string, unknown> = {}) => call(app, 'POST', '/v1/wallets/me/pay-and-call', agent.secret, { url, maxPayment: max(), ...body });
const rows = async (agent: Agent) =>
  app.ctx.database.query<{ status: string; amount: string; scheme: string; valid_before: string; transaction: string | null; error: string | null }>(
    sql`select status, amount::text, scheme, valid_before::text, transaction, error from wallet_payments where wallet_id = ${agent.id}`,
  );

/** Moves the chain's time `by` seconds past the deadline of the agent's (only) payment. */
async function passDeadline(agent: Agent, by = 5n): Promise<void> {
  const deadline = BigInt((await rows(agent))[0]!.valid_before);
  const chainNow = (await app.ctx.chain.publicClient.getBlock({ blockTag: 'latest' })).timestamp;
  await rpc('evm_increaseTime', [Number(deadline + by - chainNow)]);
  await rpc('evm_mine', []);
}

/** One pass of the worker's reconciler, now. */
const reconcileNow = () => app.modules.find((m) => m.name === 'wallets')!.loops!.find((l) => l.name === 'wallets.payments-reconcile')!.run(new AbortController().signal);

/** The agent's payment once the worker has ended it (settled or failed). */
const ended = (agent: Agent) =>
  waitFor(async () => {
    const [row] = await rows(agent);
    return row && row.status !== 'pending' && row.status !== 'unknown' && row;
  }, 20_000);

async function agent(name: string, approve: boolean): Promise<Agent> {
  const created = await call(app, 'POST', '/v1/wallets', mgmt, { externalId: name, name });
  const { id, address } = created.body.data.wallet;
  await usdg().fund(address, '1');
  if (approve) await approvePermit2As(address);
  const credential = await call(app, 'POST', `/v1/wallets/${id}/credentials`, mgmt, { name: 'runtime' });
  return { id, address, secret: credential.body.data.secret };
}

/** The wallet approves Permit2 once, sent as the wallet by the devchain (the route that does it, POST /v1/wallets/me/permit2-approval, has its own test: permit2-approval.test.ts). */
async function approvePermit2As(address: Address): Promise<void> {
  await rpc('anvil_impersonateAccount', [address]);
  const data = encodeFunctionData({ abi: erc20, functionName: 'approve', args: [PERMIT2_ADDRESS, 10n ** 30n] });
  const result = await rpc('eth_sendTransaction', [{ from: address, to: app.ctx.chain.asset.address, data }]);
  await rpc('anvil_stopImpersonatingAccount', [address]);
  expect((await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash: result as Hash })).status).toBe('success');
}

const rpc = (method: string, params: unknown[]) => rpcCall(app.ctx.chain.rpcUrl, method, params);

beforeAll(async () => {
  const apiPort = await freePort();
  app = await buildWalletsApp({ env: { API_PORT: String(apiPort), PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${apiPort},127.0.0.1` } });
  mgmt = await app.mgmtSecret('upto');
});
afterAll(async () => app?.close());

describe('pay-and-call pays /x402-test/metered (upto) within maxPayment and the policy', () => {
  it('settles the use the seller reported; the chain moved exactly that from the wallet to the seller; the budget books it', async () => {
    const a = await agent('upto-1', true);
    expect((await call(app, 'PUT', `/v1/wallets/${a.id}/policy`, mgmt, { limits: [{ window: '24h', ...max(), amount: '15000' }] })).status).toBe(200);
    const url = `${app.urls.api}/x402-test/metered`;
    const before = await usdg().balanceOf(a.address);
    const answer = await pay(a, url);
    expect(answer.status).toBe(200);
    const { used, settlement } = answer.body.data.upstream.body;
    const payTo = answer.body.data.payment.payTo as Address;
    expect(BigInt(used)).toBeGreaterThanOrEqual(100n);
    expect(BigInt(used)).toBeLessThanOrEqual(10000n);
    expect(answer.body.data.payment).toMatchObject({ status: 'settled', scheme: 'upto', amount: used, transaction: settlement.transaction });
    expect(before - (await usdg().balanceOf(a.address))).toBe(BigInt(used));
    expect(await transfersTo(app, a.address, payTo)).toEqual([expect.objectContaining({ value: BigInt(used) })]);
    const budget = await call(app, 'GET', '/v1/wallets/me/budget', a.secret);
    expect(budget.body.data[0]).toMatchObject({ spent: used, reserved: '0', remaining: String(15000n - BigInt(used)) });
    // The maximum is reserved whole: a second call fits only if the 10000 maximum fits in what is left.
    const second = await pay(a, url);
    if (15000n - BigInt(used) >= 10000n) expect(second.status).toBe(200);
    else expect(second.body.data).toMatchObject({ reason: 'policy_limit_exceeded' });
  });

  it('a maximum above maxPayment is refused: nothing signed, nothing stored', async () => {
    const a = await agent('upto-2', true);
    const answer = await pay(a, `${app.urls.api}/x402-test/metered`, { maxPayment: { ...max(), amount: '9999' } });
    expect(answer.status).toBe(400);
    expect(answer.body.data.accepts).toEqual([expect.objectContaining({ scheme: 'upto', amount: '10000' })]);
    expect(await rows(a)).toEqual([]);
  });

  it('a wallet that has not approved Permit2 is refused before anything is reserved or signed', async () => {
    const a = await agent('upto-3', false);
    const before = await usdg().balanceOf(a.address);
    const answer = await pay(a, `${app.urls.api}/x402-test/metered`);
    expect(answer.status).toBe(409);
    expect(answer.body.data).toMatchObject({ reason: 'permit2_not_approved', allowance: '0' });
    expect(await rows(a)).toEqual([]);
    expect(await usdg().balanceOf(a.address)).toBe(before);
  });
});

describe('a hostile seller', () => {
  let seller: Upstream;
  let takes = '9000';
  let says = '10';
  const payTo = randomAddress();
  beforeAll(async () => {
    const supported = await app.ctx.x402.facilitator().getSupported();
    const facilitatorAddress = (supported.kinds.find((k) => k.scheme === 'upto')!.extra as { facilitatorAddress: string }).facilitatorAddress;
    const requirement: PaymentRequirements = { ...app.ctx.x402.requirements({ url: 'x', description: 'x', mimeType: 'application/json', amount: '10000', payTo }), scheme: 'upto' };
    requirement.extra = { ...requirement.extra, assetTransferMethod: 'permit2', facilitatorAddress };
    const challenge = { x402Version: 2, resource: { url: 'http://seller/tokens', description: 'tokens', mimeType: 'application/json' }, accepts: [requirement] };
    seller = await startUpstream((req, res) => {
      const header = req.headers['payment-signature'];
      if (typeof header !== 'string') {
        res.writeHead(402, { 'content-type': 'application/json', 'payment-required': Buffer.from(JSON.stringify(challenge)).toString('base64') }).end(JSON.stringify(challenge));
        return;
      }
      // Settles more than it used, then reports a smaller amount than it took.
      const payload = app.ctx.x402.decodePayment(header);
      void app.ctx.x402.facilitator().settle(payload, { ...requirement, amount: takes }).then((settled) => {
        const receipt = Buffer.from(JSON.stringify({ ...settled, amount: says })).toString('base64');
        res.writeHead(200, { 'content-type': 'application/json', 'payment-response': receipt }).end('{"tokens":1}');
      });
    });
  });
  afterAll(async () => seller?.close());

  it('reports less than it took: the wallet books what the chain moved', async () => {
    const a = await agent('upto-4', true);
    const before = await usdg().balanceOf(a.address);
    const answer = await pay(a, `${seller.origin}/tokens`);
    expect(answer.status).toBe(200);
    expect(answer.body.data.payment).toMatchObject({ status: 'settled', amount: '9000' });
    expect(before - (await usdg().balanceOf(a.address))).toBe(9000n);
    expect(await usdg().balanceOf(payTo)).toBe(9000n);
    expect(await rows(a)).toEqual([expect.objectContaining({ status: 'settled', amount: '9000', scheme: 'upto' })]);
  });

  it('tries to take more than the maximum: refused, nothing moves, the maximum stays reserved until the permit can no longer move', async () => {
    takes = '10001';
    says = '10001';
    const a = await agent('upto-5', true);
    const before = await usdg().balanceOf(a.address);
    const answer = await pay(a, `${seller.origin}/tokens`);
    expect(answer.status).toBe(502);
    expect(answer.body.data.payment).toMatchObject({ status: 'unknown', scheme: 'upto', amount: '10000' });
    expect(await usdg().balanceOf(a.address)).toBe(before);
    expect(await transfersTo(app, a.address, payTo)).toEqual([]);

    // Past the permit's deadline on chain, the worker ends it `failed` (nothing can move now): the reservation is released.
    const deadline = BigInt((await rows(a))[0]!.valid_before);
    const chainNow = (await app.ctx.chain.publicClient.getBlock({ blockTag: 'latest' })).timestamp;
    await rpc('evm_increaseTime', [Number(deadline - chainNow) + 5]);
    await rpc('evm_mine', []);
    const ended = await waitFor(async () => {
      const [row] = await rows(a);
      return row!.status === 'failed' && row;
    }, 20_000);
    expect(ended).toMatchObject({ status: 'failed', amount: '10000' });
    expect(await usdg().balanceOf(a.address)).toBe(before);
  }, 60_000);
});

describe('a seller that settles through Multicall3 (a transaction the recogniser does not read)', () => {
  // The seller's challenge names Multicall3 as the facilitator, so the proxy accepts the permit only from it: the
  // seller sends aggregate3([proxy.settle(...)]). The money moves, but the transaction is a call of Multicall3, not a
  // direct proxy call carrying this permit, so the wallet cannot read from the logs how much of it was this permit.
  let seller: Upstream;
  let settles = true;
  const takes = 4000n;
  const payTo = randomAddress();
  const sent: Hash[] = [];
  beforeAll(async () => {
    const requirement: PaymentRequirements = { ...app.ctx.x402.requirements({ url: 'x', description: 'x', mimeType: 'application/json', amount: '10000', payTo }), scheme: 'upto' };
    requirement.extra = { ...requirement.extra, assetTransferMethod: 'permit2', facilitatorAddress: MULTICALL3_ADDRESS };
    const challenge = { x402Version: 2, resource: { url: 'http://seller/batch', description: 'batch', mimeType: 'application/json' }, accepts: [requirement] };
    const sender = await fundedPayer(app, '0');
    const wallet = createWalletClient({ account: sender, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
    seller = await startUpstream((req, res) => {
      const header = req.headers['payment-signature'];
      if (typeof header !== 'string') {
        res.writeHead(402, { 'content-type': 'application/json', 'payment-required': Buffer.from(JSON.stringify(challenge)).toString('base64') }).end(JSON.stringify(challenge));
        return;
      }
      const answer = (transaction: string) => {
        const receipt = Buffer.from(JSON.stringify({ success: true, transaction, network: app.ctx.chain.network, amount: takes.toString() })).toString('base64');
        res.writeHead(200, { 'content-type': 'application/json', 'payment-response': receipt }).end('{"batch":1}');
      };
      // Claims success and never sends anything: the permit expires unused.
      if (!settles) return answer(`0x${'cd'.repeat(32)}`);
      const { signature, permit2Authorization: p } = app.ctx.x402.decodePayment(header).payload as {
        signature: Hex;
        permit2Authorization: { from: Address; permitted: { token: Address; amount: string }; nonce: string; deadline: string; witness: { to: Address; facilitator: Address; validAfter: string } };
      };
      const settle = encodeFunctionData({
        abi: x402UptoPermit2ProxyABI,
        functionName: 'settle',
        args: [
          { permitted: { token: p.permitted.token, amount: BigInt(p.permitted.amount) }, nonce: BigInt(p.nonce), deadline: BigInt(p.deadline) },
          takes,
          p.from,
          { to: p.witness.to, facilitator: p.witness.facilitator, validAfter: BigInt(p.witness.validAfter) },
          signature,
        ],
      });
      void wallet
        .writeContract({ address: MULTICALL3_ADDRESS, abi: aggregate3Abi, functionName: 'aggregate3', args: [[{ target: UPTO_PERMIT2_PROXY, allowFailure: false, callData: settle }]], gas: 500_000n })
        .then(async (hash) => {
          expect((await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash })).status).toBe('success');
          sent.push(hash);
          answer(hash);
        });
    });
  });
  afterAll(async () => seller?.close());

  it('money moved under the permit: never failed; past the deadline it is settled at the signed maximum, and the budget counts the maximum as spent', async () => {
    settles = true;
    const a = await agent('upto-multicall-1', true);
    expect((await call(app, 'PUT', `/v1/wallets/${a.id}/policy`, mgmt, { limits: [{ window: '24h', ...max(), amount: '15000' }] })).status).toBe(200);
    const before = await usdg().balanceOf(a.address);
    const answer = await pay(a, `${seller.origin}/batch`);
    expect(answer.status).toBe(200);
    expect(answer.body.data.payment).toMatchObject({ scheme: 'upto', amount: '10000' });
    expect(answer.body.data.payment.status).not.toBe('failed');
    // The chain: the seller took 4000 through Multicall3, in a transaction whose `to` is Multicall3.
    expect(before - (await usdg().balanceOf(a.address))).toBe(takes);
    expect(await transfersTo(app, a.address, payTo)).toEqual([{ tx: sent.at(-1)!, value: takes }]);
    expect((await app.ctx.chain.publicClient.getTransaction({ hash: sent.at(-1)! })).to?.toLowerCase()).toBe(MULTICALL3_ADDRESS.toLowerCase());

    // Just past the deadline it stays open: a lagging log index may still show the settlement.
    await passDeadline(a);
    await reconcileNow();
    expect((await rows(a))[0]!.status).toBe('pending');
    await passDeadline(a, UNREADABLE_SETTLEMENT_GRACE_SECONDS + 5n);
    const row = await ended(a);
    expect(row).toMatchObject({ status: 'settled', amount: '10000', scheme: 'upto', transaction: null, error: UNKNOWN_AMOUNT_NOTE });
    expect(row.error).toMatch(/^settled amount unknown: booked at the signed maximum/);
    const budget = await call(app, 'GET', '/v1/wallets/me/budget', a.secret);
    expect(budget.body.data[0]).toMatchObject({ spent: '10000', reserved: '0', remaining: '5000' });
    // The booking is never below what moved.
    expect(BigInt(row.amount)).toBeGreaterThanOrEqual(before - (await usdg().balanceOf(a.address)));
  }, 60_000);

  it('the permit never used: past the deadline it is failed, and the budget releases the maximum', async () => {
    settles = false;
    const a = await agent('upto-multicall-2', true);
    expect((await call(app, 'PUT', `/v1/wallets/${a.id}/policy`, mgmt, { limits: [{ window: '24h', ...max(), amount: '15000' }] })).status).toBe(200);
    const before = await usdg().balanceOf(a.address);
    const answer = await pay(a, `${seller.origin}/batch`);
    expect(answer.status).toBe(200);
    expect(answer.body.data.payment).toMatchObject({ status: 'pending', scheme: 'upto', amount: '10000' });
    expect((await call(app, 'GET', '/v1/wallets/me/budget', a.secret)).body.data[0]).toMatchObject({ spent: '0', reserved: '10000' });

    await passDeadline(a);
    const row = await ended(a);
    expect(row).toMatchObject({ status: 'failed', amount: '10000', transaction: null });
    expect(row.error).toMatch(/^authorization_expired/);
    expect((await call(app, 'GET', '/v1/wallets/me/budget', a.secret)).body.data[0]).toMatchObject({ spent: '0', reserved: '0', remaining: '15000' });
    expect(await usdg().balanceOf(a.address)).toBe(before);
    expect(await transfersTo(app, a.address, payTo)).toEqual([]);
  }, 60_000);
});
