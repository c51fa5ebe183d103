// Settlements whose outcome the settling call never recorded: a crash right after the broadcast,
// and a receipt wait that timed out. A restarted facilitator (or a retry) finds the outcome on chain
// and records it; nothing is ever broadcast twice.
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { getAddress, type Hash } from 'viem';
import type { Eip3009Payload } from '../../src/x402/payload.js';
import { payloadHashOf } from '../../src/x402/facilitator/precheck.js';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcCall } from '../../src/chain/rpc.js';
import { Facilitator, type FacilitatorOptions } from '../../src/x402/facilitator/facilitator.js';
import { PgPendingSettlementStore } from '../../src/x402/facilitator/pending-store.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { fundedPayer, nonceOf, relayerTxCount, signAuthorization, transfersForNonce } from '../x402/support.js';
import { requirementsFor } from './support.js';

let app: TestApp;
// No worker role: the background reconciler must not do the restarted node's job in these tests.
beforeAll(async () => {
  app = await buildTestApp({ roles: ['api', 'facilitator'] });
});
afterAll(async () => app?.close());

/** A facilitator process of its own (own relayer key, own memory): "restart" = build another one. */
async function facilitatorWith(relayer: PrivateKeyAccount, options: FacilitatorOptions = {}) {
  await app.ctx.chain.devchain!.fundGas(relayer.address);
  return new Facilitator({ db: app.ctx.db, clock: app.ctx.clock, log: app.ctx.log, chain: app.ctx.chain, relayer }, options);
}

async function payment(): Promise<{ payload: PaymentPayload; requirements: PaymentRequirements; payer: PrivateKeyAccount }> {
  const payer = await fundedPayer(app, '1');
  const requirements = requirementsFor(app);
  return { payer, requirements, payload: await signAuthorization(payer, requirements) };
}

const keyOf = (app: TestApp, payer: PrivateKeyAccount, payload: PaymentPayload) => ({
  network: 'eip155:4663',
  asset: app.ctx.chain.asset.address,
  payer: payer.address,
  nonce: nonceOf(payload),
});

describe('crash between broadcast and the ledger write', () => {
  async function crashAfterBroadcast(relayer: PrivateKeyAccount) {
    let broadcast: Hash | undefined;
    const crashing = await facilitatorWith(relayer, {
      hooks: {
        afterBroadcast: (hash) => {
          broadcast = hash;
          throw new Error('simulated crash');
        },
      },
    });
    const p = await payment();
    await expect(crashing.settle(p.payload, p.requirements)).rejects.toThrow('simulated crash');
    const row = await crashing.ledger.find(keyOf(app, p.payer, p.payload));
    expect(row).toMatchObject({ status: 'claimed', txHash: null });
    expect(broadcast).toBeDefined();
    // Mined before the tests count the relayer's transactions: the devchain mines a sent transaction on its own
    // time, and a count read before that (a loaded CI machine once did) would take the crashed broadcast for a second one.
    await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash: broadcast! });
    return { ...p, broadcast: broadcast! };
  }

  it('the reconciler of a restarted facilitator finds and records it without re-broadcasting', async () => {
    const relayer = privateKeyToAccount(generatePrivateKey());
    const { payer, payload, requirements, broadcast } = await crashAfterBroadcast(relayer);
    const sent = await relayerTxCount(app, relayer.address);

    // ownerLeaseMs 0: the crashed node's claim is past its lease, so its unanswered success is the retry's.
    const restarted = await facilitatorWith(relayer, { reconcileAfterMs: 0, ownerLeaseMs: 0 });
    expect(await restarted.reconcileOpen()).toEqual({ checked: 1, resolved: 1 });
    expect(await restarted.ledger.find(keyOf(app, payer, payload))).toMatchObject({ status: 'settled', txHash: broadcast });

    const retried = await restarted.settle(payload, requirements);
    expect(retried).toMatchObject({ success: true, transaction: broadcast, payer: payer.address });
    expect(await restarted.settle(payload, requirements)).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_nonce_already_used', transaction: broadcast });
    expect(await relayerTxCount(app, relayer.address)).toBe(sent);
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
  });

  it('a retry of the same settle on the restarted facilitator resolves it from the chain', async () => {
    const relayer = privateKeyToAccount(generatePrivateKey());
    const { payer, payload, requirements, broadcast } = await crashAfterBroadcast(relayer);
    const sent = await relayerTxCount(app, relayer.address);

    // Within the crashed claim's lease nobody else may say success (its node may still answer).
    expect(await (await facilitatorWith(relayer)).settle(payload, requirements)).toMatchObject({ success: false, transaction: broadcast });
    const restarted = await facilitatorWith(relayer, { ownerLeaseMs: 0 });
    expect(await restarted.settle(payload, requirements)).toMatchObject({ success: true, transaction: broadcast });
    expect(await relayerTxCount(app, relayer.address)).toBe(sent);
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
  });
});

describe('receipt wait timed out', () => {
  it('answers settlement_pending with the hash, then a retry reconciles the same transaction', async () => {
    const relayer = privateKeyToAccount(generatePrivateKey());
    const facilitator = await facilitatorWith(relayer, { confirmationTimeoutMs: 300 });
    const { payer, payload, requirements } = await payment();
    const rpc = app.ctx.chain.rpcUrl;
    await rpcCall(rpc, 'evm_setAutomine', [false]);
    let pending;
    try {
      pending = await facilitator.settle(payload, requirements);
    } finally {
      await rpcCall(rpc, 'evm_setAutomine', [true]);
    }
    expect(pending).toMatchObject({ success: false, errorReason: 'settlement_pending' });
    expect(pending.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    const signature = (payload.payload as { signature: string }).signature;
    expect(await new PgPendingSettlementStore(facilitator.ledger).get(signature)).toBe(pending.transaction);
    // Counted once the pending transaction is mined (re-enabling automine may mine it, a moment later).
    await rpcCall(rpc, 'evm_mine', []);
    const sent = await relayerTxCount(app, relayer.address);
    const settled = await facilitator.settle(payload, requirements);
    expect(settled).toMatchObject({ success: true, transaction: pending.transaction });
    expect(await relayerTxCount(app, relayer.address)).toBe(sent);
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
  });

  it('the reconciler resolves a pending broadcast once it is mined', async () => {
    const relayer = privateKeyToAccount(generatePrivateKey());
    const facilitator = await facilitatorWith(relayer, { confirmationTimeoutMs: 300, reconcileAfterMs: 0 });
    const { payer, payload, requirements } = await payment();
    const rpc = app.ctx.chain.rpcUrl;
    await rpcCall(rpc, 'evm_setAutomine', [false]);
    try {
      expect(await facilitator.settle(payload, requirements)).toMatchObject({ errorReason: 'settlement_pending' });
      expect(await facilitator.reconcileOpen()).toEqual({ checked: 1, resolved: 0 }); // still in the mempool
    } finally {
      await rpcCall(rpc, 'evm_setAutomine', [true]);
    }
    await rpcCall(rpc, 'evm_mine', []);
    expect(await facilitator.reconcileOpen()).toEqual({ checked: 1, resolved: 1 });
    expect(await facilitator.ledger.find(keyOf(app, payer, payload))).toMatchObject({ status: 'settled' });
  });
});

describe('the node refuses the relayer transaction', () => {
  it('an unfunded relayer: nothing sent, claim released, a retry after funding settles', async () => {
    const relayer = privateKeyToAccount(generatePrivateKey()); // no gas money
    const facilitator = new Facilitator({ db: app.ctx.db, clock: app.ctx.clock, log: app.ctx.log, chain: app.ctx.chain, relayer });
    const { payer, payload, requirements } = await payment();
    await expect(facilitator.settle(payload, requirements)).rejects.toThrow(/unavailable/);
    expect(await facilitator.ledger.find(keyOf(app, payer, payload))).toBeNull();

    await app.ctx.chain.devchain!.fundGas(relayer.address);
    expect(await facilitator.settle(payload, requirements)).toMatchObject({ success: true });
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
  });
});

describe('crash right after the claim, before anything was sent', () => {
  /** The claim a node writes before it sends, left behind by a node that died at that moment. */
  async function orphanedClaim() {
    const p = await payment();
    const facilitator = await facilitatorWith(privateKeyToAccount(generatePrivateKey()));
    const key = keyOf(app, p.payer, p.payload);
    const eip3009 = p.payload.payload as Eip3009Payload;
    const claim = await facilitator.ledger.claim({
      ...key,
      asset: getAddress(key.asset),
      payTo: getAddress(p.requirements.payTo),
      amount: p.requirements.amount,
      validBefore: eip3009.authorization.validBefore,
      signature: eip3009.signature,
      payloadHash: payloadHashOf(key, p.requirements, eip3009),
      paymentId: null,
      claimToken: 'the-dead-node',
      fromBlock: 0,
      request: { payload: p.payload, requirements: p.requirements },
    });
    expect(claim.kind).toBe('claimed');
    return { ...p, key };
  }

  it('the reconciler takes the claim over once its lease lapsed and executes it; the retry gets the one success', async () => {
    const { payer, payload, requirements, key } = await orphanedClaim();
    const live = await facilitatorWith(privateKeyToAccount(generatePrivateKey()), { reconcileAfterMs: 0 });
    // Within the lease the dead node might still be sending: left alone.
    await live.reconcileOpen();
    expect(await live.ledger.find(key)).toMatchObject({ status: 'claimed', txHash: null });

    const restarted = await facilitatorWith(privateKeyToAccount(generatePrivateKey()), { reconcileAfterMs: 0, ownerLeaseMs: 0 });
    await restarted.reconcileOpen();
    const row = await restarted.ledger.find(key);
    expect(row).toMatchObject({ status: 'settled', claimToken: '', successAnsweredAt: null });

    expect(await restarted.settle(payload, requirements)).toMatchObject({ success: true, transaction: row!.txHash });
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
  });

  it("a retry of the payment takes the lapsed claim over itself instead of waiting until validBefore", async () => {
    const { payer, payload, requirements } = await orphanedClaim();
    const restarted = await facilitatorWith(privateKeyToAccount(generatePrivateKey()), { ownerLeaseMs: 0, joinWaitMs: 2_000 });

    expect(await restarted.settle(payload, requirements)).toMatchObject({ success: true });
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
  });
});

describe('a settle that stalls before sending while its claim is taken over', () => {
  it('sends nothing and writes no outcome: the new owner executes it, and the retry gets the one success', async () => {
    const p = await payment();
    const key = keyOf(app, p.payer, p.payload);
    const relayer = privateKeyToAccount(generatePrivateKey());
    const stalled: Facilitator = await facilitatorWith(relayer, {
      // Another node took the claim over while this one stalled past its lease (lease 0 here: lapsed at once,
      // so this node asks the ledger before sending instead of trusting a fresh claim).
      ownerLeaseMs: 0,
      hooks: { beforeSend: async () => void (await stalled.ledger.takeOver(key, 0, 'the-new-owner')) },
    });

    expect(await stalled.settle(p.payload, p.requirements)).toMatchObject({ success: false, errorReason: 'settlement_pending' });
    expect(await relayerTxCount(app, relayer.address)).toBe(0);
    expect(await stalled.ledger.find(key)).toMatchObject({ status: 'claimed', claimToken: 'the-new-owner', txHash: null });

    const newOwner = await facilitatorWith(privateKeyToAccount(generatePrivateKey()), { reconcileAfterMs: 0, ownerLeaseMs: 0 });
    await newOwner.reconcileOpen();
    expect(await newOwner.settle(p.payload, p.requirements)).toMatchObject({ success: true });
    expect(await transfersForNonce(app, p.payer.address, nonceOf(p.payload))).toBe(1);
  });
});
