// A payer out to burn our relayer's gas: a contract wallet (compiled from contracts/test with the
// repository's solc) whose EIP-1271 check burns gas and then says yes. USDG calls that check with all the
// gas a settlement forwards, so before the ceiling one 1-unit relay charge cost 20M gas and a public
// /settle 5M; on the quick path the settle went out at 150k and reverted. And a payer who pays itself, or
// pays dust, through the doors that settle in-process (the public facilitator, the relay, a paid endpoint, a
// credit top-up, a storage upload, a payment intent). Every attack ends with the relayer's float read
// from the chain: refused payers cost 0 sends; an allowed contract payer costs at most the ceiling.
import { x402Client, x402HTTPClient } from '@x402/core/client';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { readFileSync } from 'node:fs';
import { createWalletClient, getAddress, http, type Address, type Hash, type LocalAccount } from 'viem';
import { generatePrivateKey, privateKeyToAccount, toAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSolidity } from '../../scripts/compile-contracts.mjs';
import { MULTICALL3_ADDRESS } from '../../src/chain/multicall3.js';
import { readPaymentRequired } from '../../src/x402/client.js';
import { requirementsFor } from '../facilitator/support.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { createShop, createIntent } from '../intents/fixtures.js';
import { signPayment } from '../../src/x402/client.js';
import { mppxCredential } from '../relay/mppx-client.js';
import { post } from '../relay/support.js';
import { challengeAndSign, jpegOf, NETWORK, newKey, readOrder, upload, uploadForm, USDG } from '../storage/helpers.js';
import { fundedPayer, randomAddress, signAuthorization } from '../x402/support.js';
import { gasTally, reportTally } from './support.js';

const CEILING = 120_000n;
const compiled = compileSolidity({
  'GasBurningWallet.sol': readFileSync(new URL('../../contracts/test/GasBurningWallet.sol', import.meta.url), 'utf8'),
  'ERC1271Wallet.sol': readFileSync(new URL('../../contracts/test/ERC1271Wallet.sol', import.meta.url), 'utf8'),
});

/** Deploys a contract wallet from a fresh funded key and gives it `usdg` USDG. */
async function deployWallet(app: TestApp, name: 'GasBurningWallet' | 'ERC1271Wallet', arg: bigint | Address, usdg = '5'): Promise<Address> {
  const deployer = privateKeyToAccount(generatePrivateKey());
  await app.ctx.chain.devchain!.fundGas(deployer.address);
  const wallet = createWalletClient({ account: deployer, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
  const inputType = typeof arg === 'bigint' ? 'uint256' : 'address';
  const hash = await wallet.deployContract({
    abi: [{ type: 'constructor', stateMutability: 'nonpayable', inputs: [{ name: 'arg', type: inputType }] }],
    bytecode: compiled[name]!.bytecode as `0x${string}`,
    args: [arg],
  });
  const receipt = await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash });
  await app.ctx.chain.devchain!.fund(receipt.contractAddress!, usdg);
  return receipt.contractAddress!;
}

/** The contract as a payer: its address on the authorization, a signature from `signer` (any key: the burner says yes to all). */
function contractPayer(address: Address, signer: LocalAccount = privateKeyToAccount(generatePrivateKey())): LocalAccount {
  return toAccount({
    address,
    signMessage: (args) => signer.signMessage(args),
    signTransaction: (args) => signer.signTransaction(args),
    signTypedData: (args) => signer.signTypedData(args as never),
  });
}

/** What the relayer keys hold together and have sent: read before and after every attack. */
async function relayer(app: TestApp): Promise<{ wei: bigint; sent: number }> {
  const client = app.ctx.chain.publicClient;
  const keys = app.ctx.chain.relayers.map((key) => key.address);
  const balances = await Promise.all(keys.map((address) => client.getBalance({ address })));
  const counts = await Promise.all(keys.map((address) => client.getTransactionCount({ address })));
  return { wei: balances.reduce((a, b) => a + b, 0n), sent: counts.reduce((a, b) => a + b, 0) };
}

/** Runs one attack and counts what it cost the relayer: a refused payer must cost no send at all. */
async function costOf(app: TestApp, attack: () => Promise<void>, expectSends: 0 | 'within the ceiling'): Promise<{ sent: number; gas: bigint }> {
  const before = await relayer(app);
  await attack();
  const after = await relayer(app);
  const sent = after.sent - before.sent;
  const gasPrice = await app.ctx.chain.publicClient.getGasPrice();
  // Spent wei over today's price: an upper bound on the gas (the price only falls on an idle devchain).
  const gas = before.wei - after.wei === 0n ? 0n : (before.wei - after.wei) / (gasPrice > 0n ? gasPrice : 1n);
  gasTally.attacks += 1;
  if (expectSends === 0) {
    gasTally.refusedSends += sent;
    expect(sent, 'transactions sent for a refused payer').toBe(0);
    expect(after.wei, "the relayer's float").toBe(before.wei);
  } else {
    if (sent > 0 && gas > CEILING * BigInt(sent)) gasTally.overCeiling += 1;
    expect(sent).toBeLessThanOrEqual(1);
  }
  return { sent, gas };
}

const settleAt = (app: TestApp, paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirements, path: 'settle' | 'verify' = 'settle') =>
  app.origins.facilitator!.inject({ method: 'POST', url: `/${path}`, payload: { x402Version: 2, paymentPayload, paymentRequirements } as object });

/** The gas limit and use of the relayer's one transaction in `hash`. */
async function limitAndUse(app: TestApp, hash: Hash): Promise<{ limit: bigint; used: bigint; to: string }> {
  const [tx, receipt] = await Promise.all([app.ctx.chain.publicClient.getTransaction({ hash }), app.ctx.chain.publicClient.getTransactionReceipt({ hash })]);
  return { limit: tx.gas, used: receipt.gasUsed, to: tx.to!.toLowerCase() };
}

afterAll(() => reportTally('gas-burner'));

describe('contract payers are refused by default, on every door, before anything is sent', () => {
  let app: TestApp;
  let burner: Address;
  beforeAll(async () => {
    app = await buildTestApp();
    burner = await deployWallet(app, 'GasBurningWallet', 5_000_000n);
  });
  afterAll(async () => app?.close());

  it('the public /verify names payer_has_code', async () => {
    const requirements = requirementsFor(app, '1000', randomAddress());
    const answer = await settleAt(app, await signAuthorization(contractPayer(burner) as never, requirements), requirements, 'verify');
    expect(answer.json()).toMatchObject({ isValid: false, invalidReason: 'payer_has_code', payer: getAddress(burner) });
  });

  it('the public /settle refuses it (65-byte signature: the quick path is never taken); nothing is sent', async () => {
    const requirements = requirementsFor(app, '1000', randomAddress());
    const payload = await signAuthorization(contractPayer(burner) as never, requirements);
    await costOf(app, async () => {
      expect((await settleAt(app, payload, requirements)).json()).toMatchObject({ success: false, errorReason: 'payer_has_code', transaction: '' });
    }, 0);
  });

  it('the relay refuses its credential (an MPP charge signed by mppx); nothing is sent', async () => {
    const built = await mppxCredential({ account: contractPayer(burner), amount: '10000', recipient: randomAddress() });
    await costOf(app, async () => {
      const res = await post(app, '/v1/mpp/broadcast', { credential: built.credential, request: built.request }, { 'idempotency-key': `burner-${Date.now()}` });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain('payer_has_code');
    }, 0);
  });

  it('a paid endpoint answers 402 payer_has_code; nothing is sent', async () => {
    const url = `${app.urls.api}/x402-test/ping`;
    const first = await fetch(url);
    const challenge = readPaymentRequired((n) => first.headers.get(n), await first.json());
    const payload = await signAuthorization(contractPayer(burner) as never, challenge.accepts[0]!);
    await costOf(app, async () => {
      const res = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(payload) } });
      expect([res.status, ((await res.json()) as { error?: string }).error]).toEqual([402, 'payer_has_code']);
    }, 0);
  });

  it('a credit top-up answers 402 payer_has_code and credits nothing; nothing is sent', async () => {
    const token = await app.identityToken('burner-top-up');
    const url = `${app.urls.api}/credits/top-up`;
    const post = (headers: Record<string, string> = {}) =>
      fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify({ amountUsdCents: 200 }) });
    const challenge = (await (await post()).json()) as { accepts: PaymentRequirements[] };
    const payload = await signAuthorization(contractPayer(burner) as never, challenge.accepts[0]!, {}, { url, description: '', mimeType: 'application/json' });
    await costOf(app, async () => {
      const res = await post({ 'payment-signature': encodePaymentSignatureHeader(payload) });
      expect([res.status, ((await res.json()) as { error?: string }).error]).toEqual([402, 'payer_has_code']);
    }, 0);
    expect(await app.ctx.services.credits.balance('burner-top-up')).toBe(0);
  });

  it('a storage upload paid through the official x402 client answers 402 payer_has_code; the order stays awaiting payment; nothing is sent', async () => {
    // The official client signs for the contract's address (its account is the contract payer).
    const client = x402Client.fromConfig({
      schemes: [{ network: NETWORK, client: new ExactEvmScheme(contractPayer(burner) as never) }],
      spendControls: { allowedAssets: [{ network: NETWORK, asset: USDG, maxAmountPerPayment: '5000' }] },
    });
    const payer = { account: contractPayer(burner) as never, http: new x402HTTPClient(client) };
    const image = await jpegOf(10);
    const key = newKey();
    const { headers, required } = await challengeAndSign(app, key, uploadForm(image), payer);
    await costOf(app, async () => {
      const res = await upload(app, key, uploadForm(image), { headers });
      expect([res.status, ((await res.json()) as { error?: string }).error]).toEqual([402, 'payer_has_code']);
    }, 0);
    const orderId = new URL(required.resource.url).searchParams.get('orderId')!;
    expect((await readOrder(app, orderId, key)).body.data.status).toBe('awaiting_payment');
  });

  it('a payment intent stays payable and names the refusal; nothing is sent', async () => {
    const shop = await createShop(app);
    const intent = (await createIntent(app, shop, { amountUsdCents: 150 })).json();
    const challengeRes = await app.origins.api!.inject({ method: 'POST', url: `/v1/payment-intents/${intent.id}/pay` });
    const challenge = readPaymentRequired((n) => challengeRes.headers[n.toLowerCase()] as string | undefined, challengeRes.json());
    const { header } = await signPayment(contractPayer(burner) as never, challenge);
    await costOf(app, async () => {
      const res = await app.origins.api!.inject({ method: 'POST', url: `/v1/payment-intents/${intent.id}/pay`, headers: { 'payment-signature': header } });
      expect(res.statusCode).toBe(402);
      expect(res.body).toContain('payer_has_code');
    }, 0);
    const after = await app.origins.api!.inject({ method: 'GET', url: `/v1/payment-intents/${intent.id}`, headers: { authorization: `Bearer ${shop.apiKey}` } });
    expect(after.json().status).toBe('pending');
  });
});

describe('what buys nothing is not settled on the in-process doors either', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await buildTestApp();
  });
  afterAll(async () => app?.close());

  it('the relay refuses a self-payment (payer = recipient) and a 1-unit charge; nothing is sent', async () => {
    const payer = await fundedPayer(app, '1');
    for (const [amount, recipient, words] of [
      ['10000', payer.address, 'payer is the payee'],
      ['1', randomAddress(), 'minimum'],
    ] as const) {
      const built = await mppxCredential({ account: payer, amount, recipient });
      await costOf(app, async () => {
        const res = await post(app, '/v1/mpp/broadcast', { credential: built.credential, request: built.request }, { 'idempotency-key': `self-${amount}-${Date.now()}` });
        expect(res.status).toBe(400);
        expect(((await res.json()) as { error: { message: string } }).error.message).toContain(words);
      }, 0);
    }
  });

  it('a payment intent whose payTo is the payer is refused; nothing is sent', async () => {
    const payer = await fundedPayer(app, '5');
    const shop = await createShop(app);
    const identity = await app.identityToken(shop.userId);
    const merchant = await app.origins.api!.inject({
      method: 'POST',
      url: `/v1/projects/${shop.projectId}/merchants`,
      headers: { authorization: `Bearer ${identity}` },
      payload: { name: 'self', payTo: payer.address },
    });
    expect(merchant.statusCode).toBe(201);
    const intent = (await createIntent(app, { ...shop, merchantId: merchant.json().data.id }, { amountUsdCents: 150 })).json();
    expect(getAddress(intent.payTo)).toBe(payer.address);
    const challengeRes = await app.origins.api!.inject({ method: 'POST', url: `/v1/payment-intents/${intent.id}/pay` });
    const challenge = readPaymentRequired((n) => challengeRes.headers[n.toLowerCase()] as string | undefined, challengeRes.json());
    const { header } = await signPayment(payer, challenge);
    await costOf(app, async () => {
      const res = await app.origins.api!.inject({ method: 'POST', url: `/v1/payment-intents/${intent.id}/pay`, headers: { 'payment-signature': header } });
      expect([res.statusCode, res.json().error]).toEqual([402, 'invalid_payment_requirements']);
    }, 0);
  });
});

describe('with FACILITATOR_CONTRACT_PAYERS=allow, a contract payer settles only under the gas ceiling', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await buildTestApp({ env: { FACILITATOR_CONTRACT_PAYERS: 'allow', FACILITATOR_MAX_SETTLE_GAS: String(CEILING) } });
  });
  afterAll(async () => app?.close());

  for (const burn of [5_000_000n, 20_000_000n]) {
    it(`a check burning ${burn} gas is refused gas_over_ceiling at /verify, /settle and the relay; nothing is sent`, async () => {
      const burner = await deployWallet(app, 'GasBurningWallet', burn);
      const requirements = requirementsFor(app, '1000', randomAddress());
      const payload = await signAuthorization(contractPayer(burner) as never, requirements);
      expect((await settleAt(app, payload, requirements, 'verify')).json()).toMatchObject({ isValid: false, invalidReason: 'gas_over_ceiling' });
      await costOf(app, async () => {
        expect((await settleAt(app, payload, requirements)).json()).toMatchObject({ success: false, errorReason: 'gas_over_ceiling', transaction: '' });
        const built = await mppxCredential({ account: contractPayer(burner), amount: '1000', recipient: randomAddress() });
        const res = await post(app, '/v1/mpp/broadcast', { credential: built.credential, request: built.request }, { 'idempotency-key': `burn-${burn}-${Date.now()}` });
        expect(((await res.json()) as { error: { message: string } }).error.message).toContain('gas_over_ceiling');
      }, 0);
    });
  }

  it('a check that fits is settled alone, with a gas limit at or below the ceiling', async () => {
    const burner = await deployWallet(app, 'GasBurningWallet', 20_000n);
    const payTo = randomAddress();
    const requirements = requirementsFor(app, '1000', payTo);
    const payload = await signAuthorization(contractPayer(burner) as never, requirements);
    let hash: Hash | undefined;
    const cost = await costOf(app, async () => {
      const answer = (await settleAt(app, payload, requirements)).json();
      expect(answer).toMatchObject({ success: true });
      hash = answer.transaction;
    }, 'within the ceiling');
    expect(cost.sent).toBe(1);
    const tx = await limitAndUse(app, hash!);
    expect(tx.to).not.toBe(MULTICALL3_ADDRESS.toLowerCase());
    expect(tx.limit).toBeLessThanOrEqual(CEILING);
    expect(tx.used).toBeLessThanOrEqual(CEILING);
    expect(await app.ctx.chain.devchain!.balanceOf(payTo)).toBe(1000n);
  });

  it("an honest EIP-1271 wallet (its owner's signature) settles", async () => {
    const owner = privateKeyToAccount(generatePrivateKey());
    const wallet = await deployWallet(app, 'ERC1271Wallet', owner.address);
    const requirements = requirementsFor(app, '1000', randomAddress());
    const payload = await signAuthorization(contractPayer(wallet, owner) as never, requirements);
    expect((await settleAt(app, payload, requirements)).json()).toMatchObject({ success: true, payer: expect.stringMatching(new RegExp(wallet, 'i')) });
  });
});

describe('every settlement our relayer sends carries a limit at or below the ceiling', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await buildTestApp({ env: { FACILITATOR_MAX_SETTLE_GAS: String(CEILING) } });
  });
  afterAll(async () => app?.close());

  it('plain EOA settles (the quick path) and a burst batched into Multicall3: each call ≤ the ceiling, a batch ≤ its members’ sum', async () => {
    const payers = await Promise.all(Array.from({ length: 6 }, () => fundedPayer(app, '1')));
    const payTo = randomAddress();
    const requirements = requirementsFor(app, '1000', payTo);
    const payloads = await Promise.all(payers.map((payer) => signAuthorization(payer, requirements)));
    const answers = await Promise.all(payloads.map((payload) => settleAt(app, payload, requirements)));
    const hashes = [...new Set(answers.map((answer) => answer.json().transaction as Hash))];
    expect(answers.every((answer) => answer.json().success)).toBe(true);
    for (const hash of hashes) {
      const tx = await limitAndUse(app, hash);
      const members = answers.filter((answer) => answer.json().transaction === hash).length;
      if (tx.to === MULTICALL3_ADDRESS.toLowerCase()) expect(tx.limit).toBeLessThanOrEqual((CEILING * BigInt(members) * 64n) / 63n + 40_000n + 15_000n * BigInt(members));
      else expect(tx.limit).toBeLessThanOrEqual(CEILING);
      // An EOA's transferWithAuthorization (a new payee's balance slot included) fits the default ceiling with room.
      expect(tx.used).toBeLessThanOrEqual(CEILING * BigInt(members));
    }
  });
});
