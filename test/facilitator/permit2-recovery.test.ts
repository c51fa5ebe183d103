// Crashes and dead nodes on the Permit2 and batch-settlement paths: the ledger row and the chain decide, as for
// EIP-3009. A settle that crashed right after its broadcast is found on chain (by the permit's own proxy call and
// its paired Transfer), a claim whose node died before sending is taken over and executed, a permit that expired
// unused fails, and a batch-settlement deposit crashed after broadcast is found by its authorization's logs.
// Nothing is ever sent twice, and the success is answered once.
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import type { Hash } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PERMIT2_ADDRESS } from '../../src/chain/x402-contracts.js';
import { Facilitator, type FacilitatorOptions } from '../../src/x402/facilitator/facilitator.js';
import { nonceHex, permit2PayloadHash, parsePermit2 } from '../../src/x402/facilitator/permit2/payment.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { fundedPayer, randomAddress, relayerTxCount } from '../x402/support.js';
import { batchBuyer, startBatchSeller } from './batch-support.js';
import { officialPayment, permit2Payer, permit2Requirements, permitNonce, signPermit, transfersTo } from './permit2-support.js';

let app: TestApp;
// No worker role: the background reconciler must not do the restarted node's job in these tests.
beforeAll(async () => {
  app = await buildTestApp({ roles: ['api', 'facilitator'] });
});
afterAll(async () => app?.close());

/** A facilitator process of its own (own relayer key, own memory): "restart" = build another one with that key. */
async function facilitatorWith(relayer: PrivateKeyAccount, options: FacilitatorOptions = {}) {
  await app.ctx.chain.devchain!.fundGas(relayer.address);
  return new Facilitator({ db: app.ctx.db, clock: app.ctx.clock, log: app.ctx.log, chain: app.ctx.chain, relayer }, options);
}

const keyOf = (payer: PrivateKeyAccount, payload: PaymentPayload) => ({ network: 'eip155:4663', asset: PERMIT2_ADDRESS, payer: payer.address, nonce: nonceHex(permitNonce(payload)) });

async function crashAfterBroadcast(relayer: PrivateKeyAccount, payload: PaymentPayload, requirements: PaymentRequirements): Promise<Hash> {
  let broadcast: Hash | undefined;
  const crashing = await facilitatorWith(relayer, {
    hooks: {
      afterBroadcast: (hash) => {
        broadcast = hash;
        throw new Error('simulated crash');
      },
    },
  });
  await expect(crashing.settle(payload, requirements)).rejects.toThrow('simulated crash');
  await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash: broadcast! });
  return broadcast!;
}

describe('Permit2: a crash between the broadcast and the ledger write', () => {
  for (const scheme of ['exact', 'upto'] as const) {
    it(`${scheme}: a restarted node's reconciler finds the settle on chain, the retry gets the one success, nothing is sent again`, async () => {
      const relayer = privateKeyToAccount(generatePrivateKey());
      const payer = await permit2Payer(app, '1');
      const payTo = randomAddress();
      const requirements = permit2Requirements(app, scheme, '3000', payTo, relayer.address);
      const payload = await officialPayment(payer, requirements);
      const broadcast = await crashAfterBroadcast(relayer, payload, requirements);
      const sent = await relayerTxCount(app, relayer.address);

      const restarted = await facilitatorWith(relayer, { reconcileAfterMs: 0, ownerLeaseMs: 0 });
      expect(await restarted.ledger.find(keyOf(payer, payload))).toMatchObject({ status: 'claimed', txHash: null, kind: `permit2-${scheme}` });
      expect(await restarted.reconcileOpen()).toMatchObject({ resolved: 1 });
      expect(await restarted.ledger.find(keyOf(payer, payload))).toMatchObject({ status: 'settled', txHash: broadcast });
      expect(await restarted.settle(payload, requirements)).toMatchObject({ success: true, transaction: broadcast });
      expect(await restarted.settle(payload, requirements)).toMatchObject({ success: false, errorReason: 'permit2_invalid_nonce', transaction: broadcast });
      expect(await relayerTxCount(app, relayer.address)).toBe(sent);
      expect(await transfersTo(app, payer.address, payTo)).toHaveLength(1);
    });
  }
});

describe('Permit2: a node that died after its claim, before sending', () => {
  it('the claim is taken over once its lease lapsed and executed from the stored request; the retry gets the success', async () => {
    const payer = await permit2Payer(app, '1');
    const payTo = randomAddress();
    const requirements = permit2Requirements(app, 'exact', '2000', payTo);
    const payload = await signPermit(payer, requirements);
    const parsed = parsePermit2('eip155:4663', payload, requirements);
    if (!parsed.ok) throw new Error(parsed.message);
    const dead = await facilitatorWith(privateKeyToAccount(generatePrivateKey()));
    const claim = await dead.ledger.claim({
      ...parsed.key,
      kind: 'permit2-exact',
      token: parsed.payment.token,
      payTo,
      amount: '2000',
      validBefore: parsed.payment.deadline.toString(),
      signature: parsed.payment.signature,
      payloadHash: permit2PayloadHash(parsed.key, requirements, parsed.payment),
      paymentId: null,
      claimToken: 'the-dead-node',
      fromBlock: 0,
      request: { payload, requirements },
    });
    expect(claim.kind).toBe('claimed');
    const restarted = await facilitatorWith(privateKeyToAccount(generatePrivateKey()), { reconcileAfterMs: 0, ownerLeaseMs: 0 });
    await restarted.reconcileOpen();
    const row = await restarted.ledger.find(parsed.key);
    expect(row).toMatchObject({ status: 'settled', claimToken: '' });
    expect(await restarted.settle(payload, requirements)).toMatchObject({ success: true, transaction: row!.txHash });
    expect(await transfersTo(app, payer.address, payTo)).toHaveLength(1);
  });

  it('a permit that expired unused fails when reconciled (its deadline passed by the chain’s time): nothing moved', async () => {
    const payer = await permit2Payer(app, '1');
    const requirements = permit2Requirements(app, 'exact', '2000', randomAddress());
    const now = BigInt(Math.floor(Date.now() / 1000));
    const payload = await signPermit(payer, requirements, { deadline: now - 10n });
    const parsed = parsePermit2('eip155:4663', payload, requirements);
    if (!parsed.ok) throw new Error(parsed.message);
    const node = await facilitatorWith(privateKeyToAccount(generatePrivateKey()), { reconcileAfterMs: 0 });
    await node.ledger.claim({
      ...parsed.key,
      kind: 'permit2-exact',
      token: parsed.payment.token,
      payTo: requirements.payTo,
      amount: '2000',
      validBefore: parsed.payment.deadline.toString(),
      signature: parsed.payment.signature,
      payloadHash: permit2PayloadHash(parsed.key, requirements, parsed.payment),
      paymentId: null,
      claimToken: 'a-live-node',
      fromBlock: 0,
      request: null,
    });
    await node.reconcileOpen();
    expect(await node.ledger.find(parsed.key)).toMatchObject({ status: 'failed', errorReason: 'permit2_deadline_expired' });
  });
});

describe('batch-settlement: a deposit crashed after its broadcast', () => {
  it('is found by its authorization’s logs, answered once, never sent again', async () => {
    const seller = await startBatchSeller(app, '1000');
    try {
      const payer = await fundedPayer(app, '1');
      const buyer = batchBuyer(app, payer);
      const first = await fetch(`${seller.url}/call`);
      const payload = await buyer.http.createPaymentPayload(buyer.http.getPaymentRequiredResponse((n) => first.headers.get(n), await first.json()));
      const relayer = privateKeyToAccount(generatePrivateKey());
      const broadcast = await crashAfterBroadcast(relayer, payload, payload.accepted);
      const sent = await relayerTxCount(app, relayer.address);
      const restarted = await facilitatorWith(relayer, { reconcileAfterMs: 0, ownerLeaseMs: 0 });
      expect(await restarted.reconcileOpen()).toMatchObject({ resolved: 1 });
      expect(await restarted.settle(payload, payload.accepted)).toMatchObject({ success: true, transaction: broadcast });
      expect(await restarted.settle(payload, payload.accepted)).toMatchObject({ success: false, transaction: broadcast });
      expect(await relayerTxCount(app, relayer.address)).toBe(sent);
    } finally {
      await seller.close();
    }
  });
});
