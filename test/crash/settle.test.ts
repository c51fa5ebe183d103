// Crash points of the facilitator's settle and of a paid endpoint.
// The harness (test/crash/harness.ts) starts and kills the real `tollgate serve`; see its header for what each point must end with.
import { type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { readPaymentRequired, signPayment } from '../../src/x402/client.js';
import { signAuthorization } from '../x402/support.js';
import { describe, expect, it } from 'vitest';
import { crashHarness, freshData, serve, stop, sendThroughCrash, admin, eventually, movedFor, settlementRow, requirementsFor, flows } from './harness.js';

const { pointDone } = crashHarness('crash-points settle');

describe('crash points', () => {
  it.each(flows.settle)('facilitator settle killed at %s: one transfer at most, and a moved payment recorded as settled', async (point) => {
    const data = await freshData();
    const first = await serve(data, point);
    const payer = privateKeyToAccount(generatePrivateKey());
    await admin(data.dataDir, 'dev.fund', { address: payer.address, amount: '1' });
    const payTo = privateKeyToAccount(generatePrivateKey()).address;
    const requirements = requirementsFor(payTo);
    const payload = await signAuthorization(payer, requirements);
    const nonce = (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
    const crash = await sendThroughCrash(first, () =>
      fetch(`${first.facilitator}/settle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }) }),
    );
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const moved = await movedFor(second.rpc, payer.address, nonce, payTo);
      expect(moved.transfers).toBeLessThanOrEqual(1);
      if (moved.transfers === 1) {
        // The reconciler records it; the one success was never answered, so the honest retry gets it.
        const row = await eventually(async () => {
          const answer = await settlementRow(second, payload, requirements);
          return answer.errorReason === 'settlement_pending' ? null : answer;
        });
        expect(row).toMatchObject({ transaction: moved.tx });
      }
      expect((await movedFor(second.rpc, payer.address, nonce, payTo)).transfers).toBe(moved.transfers);
    } finally {
      await stop(second);
    }
    pointDone();
  }, 120_000);

  it.each(flows.batch)('a settlement batch killed at %s: every payment in it moves at most once, and each is recorded from the chain', async (point) => {
    const data = await freshData();
    // A window long enough for the four settles below to share one Multicall3 transaction.
    const first = await serve(data, point, { FACILITATOR_BATCH_MAX_CALLS: '64', FACILITATOR_BATCH_WAIT_MS: '400', FACILITATOR_BATCH_IDLE: 'wait' });
    const payers = Array.from({ length: 4 }, () => privateKeyToAccount(generatePrivateKey()));
    for (const payer of payers) await admin(data.dataDir, 'dev.fund', { address: payer.address, amount: '1' });
    const payTo = privateKeyToAccount(generatePrivateKey()).address;
    const requirements = requirementsFor(payTo);
    const payloads = await Promise.all(payers.map((payer) => signAuthorization(payer, requirements)));
    const nonceOf = (payload: (typeof payloads)[number]) => (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
    const settleAt = (instance: { facilitator: string }, payload: (typeof payloads)[number]) =>
      fetch(`${instance.facilitator}/settle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }) });
    const crash = await sendThroughCrash(first, async () => (await Promise.all(payloads.map((p) => settleAt(first, p))))[0]!);
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const moved = await Promise.all(payers.map((payer, i) => movedFor(second.rpc, payer.address, nonceOf(payloads[i]!), payTo)));
      // Killed after the batch went out: every payment in it moved, in one transaction, once.
      expect(moved.map((m) => m.transfers)).toEqual([1, 1, 1, 1]);
      expect(new Set(moved.map((m) => m.tx)).size).toBe(1);
      const answers = await Promise.all(
        payloads.map((payload) =>
          eventually(async () => {
            const answer = await settlementRow(second, payload, requirements);
            return answer.errorReason === 'settlement_pending' ? null : answer;
          }),
        ),
      );
      answers.forEach((answer, i) => expect(answer).toMatchObject({ transaction: moved[i]!.tx }));
      // Nothing was sent again for any of them.
      for (const [i, payer] of payers.entries()) expect((await movedFor(second.rpc, payer.address, nonceOf(payloads[i]!), payTo)).transfers).toBe(1);
    } finally {
      await stop(second);
    }
    pointDone();
  }, 120_000);

  it.each(flows.x402)('paid endpoint (ping) killed at %s: charged at most once, never again for a retry', async (point) => {
    const data = await freshData();
    const first = await serve(data, point);
    const payer = privateKeyToAccount(generatePrivateKey());
    await admin(data.dataDir, 'dev.fund', { address: payer.address, amount: '1' });
    const challengeResponse = await fetch(`${first.api}/x402-test/ping`);
    const challenge = readPaymentRequired((n) => challengeResponse.headers.get(n), await challengeResponse.json());
    const { header, payload } = await signPayment(payer, challenge);
    const nonce = (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
    const payTo = challenge.accepts[0]!.payTo as Address;
    const crash = await sendThroughCrash(first, () => fetch(`${first.api}/x402-test/ping`, { headers: { 'payment-signature': header } }));
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const before = await movedFor(second.rpc, payer.address, nonce, payTo);
      expect(before.transfers).toBeLessThanOrEqual(1);
      // A retry of the same payment never charges twice.
      await fetch(`${second.api}/x402-test/ping`, { headers: { 'payment-signature': header } });
      const after = await movedFor(second.rpc, payer.address, nonce, payTo);
      expect(after.transfers).toBe(1);
      expect(after.used).toBe(1);
    } finally {
      await stop(second);
    }
    pointDone();
  }, 120_000);
});
