// Found by the cluster suite: with the relayer keys on the facilitator nodes (`serve --roles facilitator`,
// no loops) and keyless workers (`serve --roles worker`), no node ran the settlement reconciler, so a
// settlement a killed facilitator left open stayed open for good. A keyless node's facilitator module now
// runs it from the chain alone: a crash after the broadcast is recorded as settled with that transaction,
// an authorization nobody sent is failed once the chain's time passes its validBefore, and nothing is sent.
import { randomUUID } from 'node:crypto';
import { getAddress, type Hash } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcCall } from '../../src/chain/rpc.js';
import { facilitatorModule } from '../../src/modules/facilitator/routes.js';
import { ChainSettlementReconciler } from '../../src/x402/facilitator/chain-reconciler.js';
import { Facilitator } from '../../src/x402/facilitator/facilitator.js';
import { payloadHashOf } from '../../src/x402/facilitator/precheck.js';
import type { Eip3009Payload } from '../../src/x402/payload.js';
import { requirementsFor } from '../facilitator/support.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { fundedPayer, nonceOf, relayerTxCount, signAuthorization, transfersForNonce } from '../x402/support.js';

let app: TestApp;
// No worker role: only the reconciler under test resolves anything.
beforeAll(async () => {
  app = await buildTestApp({ roles: ['api', 'facilitator'] });
});
afterAll(async () => app?.close());

const keyless = () =>
  new ChainSettlementReconciler({ db: app.ctx.db, clock: app.ctx.clock, client: app.ctx.chain.publicClient, blockTime: app.ctx.chain.blockTime, log: app.ctx.log, reconcileAfterMs: 0 });

async function facilitatorWith(hooks: ConstructorParameters<typeof Facilitator>[1] = {}) {
  const relayer = privateKeyToAccount(generatePrivateKey());
  await app.ctx.chain.devchain!.fundGas(relayer.address);
  return { relayer, facilitator: new Facilitator({ db: app.ctx.db, clock: app.ctx.clock, log: app.ctx.log, chain: app.ctx.chain, relayer }, hooks) };
}

describe('the settlement reconciler of a node without a relayer key', () => {
  it('records a settlement whose facilitator died after the broadcast, from the chain, sending nothing', async () => {
    let broadcast: Hash | undefined;
    const { relayer, facilitator } = await facilitatorWith({
      hooks: {
        afterBroadcast: (hash) => {
          broadcast = hash;
          throw new Error('simulated crash');
        },
      },
    });
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const payload = await signAuthorization(payer, requirements);
    await expect(facilitator.settle(payload, requirements)).rejects.toThrow('simulated crash');
    const key = { network: 'eip155:4663', asset: app.ctx.chain.asset.address, payer: payer.address, nonce: nonceOf(payload) };
    expect(await facilitator.ledger.find(key)).toMatchObject({ status: 'claimed', txHash: null });
    // Mined before counting, or the count could take the crashed broadcast for one sent later (test/facilitator/recovery.test.ts).
    await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash: broadcast! });
    const sent = await relayerTxCount(app, relayer.address);

    expect(await keyless().reconcileOpen()).toMatchObject({ resolved: 1 });
    expect(await facilitator.ledger.find(key)).toMatchObject({ status: 'settled', txHash: broadcast });
    expect(await relayerTxCount(app, relayer.address)).toBe(sent);
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
  });

  it('fails a claim nobody sent once its authorization has expired on chain, and leaves a live one open', async () => {
    // What a facilitator killed right after its claim leaves: the row, claimed, nothing sent.
    const { facilitator } = await facilitatorWith();
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const payload = await signAuthorization(payer, requirements, { validBefore: BigInt(Math.floor(Date.now() / 1000)) + 30n });
    const eip3009 = payload.payload as unknown as Eip3009Payload;
    const key = { network: 'eip155:4663', asset: app.ctx.chain.asset.address, payer: payer.address, nonce: nonceOf(payload) };
    const claim = await facilitator.ledger.claim({
      ...key,
      payTo: getAddress(requirements.payTo),
      amount: requirements.amount,
      validBefore: eip3009.authorization.validBefore,
      signature: eip3009.signature,
      payloadHash: payloadHashOf(key, requirements, eip3009),
      paymentId: null,
      claimToken: randomUUID(),
      fromBlock: Number(await app.ctx.chain.publicClient.getBlockNumber()),
      request: { payload, requirements },
    });
    expect(claim.kind).toBe('claimed');

    // Still valid: it could yet be sent (by the payment's retry at a facilitator), so it stays open.
    await keyless().reconcileOpen();
    expect(await facilitator.ledger.find(key)).toMatchObject({ status: 'claimed' });

    await rpcCall(app.ctx.chain.rpcUrl, 'evm_increaseTime', [60]);
    await rpcCall(app.ctx.chain.rpcUrl, 'evm_mine', []);
    expect(await keyless().reconcileOpen()).toMatchObject({ resolved: 1 });
    expect(await facilitator.ledger.find(key)).toMatchObject({ status: 'failed', errorReason: 'invalid_exact_evm_payload_authorization_valid_before' });
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(0);
  });

  it('is the facilitator module of a keyless node: one leader loop of its own, x402-settlement-reconcile-chain', async () => {
    const module = facilitatorModule({ ...app.ctx, facilitator: null, roles: ['worker'] });
    expect(module.loops?.map((loop) => [loop.name, loop.leader])).toEqual([['x402-settlement-reconcile-chain', true]]);
    expect(module.routes).toBeUndefined();
  });
});
