// Crash points of a payment-intent pay.
// The harness (test/crash/harness.ts) starts and kills the real `tollgate serve`; see its header for what each point must end with.
import { type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { readPaymentRequired, signPayment } from '../../src/x402/client.js';
import { describe, expect, it } from 'vitest';
import { crashHarness, ALLOWED_INTENT_STATES, freshData, serve, stop, sendThroughCrash, admin, eventually, movedFor, flows } from './harness.js';

const { pointDone } = crashHarness('crash-points intent');

describe('crash points', () => {
  it.each(flows.intent)('intent pay killed at %s: one transfer at most, the intent settled with it after reconcile', async (point) => {
    const data = await freshData();
    const first = await serve(data, point);
    const { token } = await admin(data.dataDir, 'dev.token', { sub: 'crash-merchant' });
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const project = (await (await fetch(`${first.api}/v1/projects`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'crash' }) })).json()) as { data: { project: { id: string }; apiKey: { secret: string } } };
    const payTo = privateKeyToAccount(generatePrivateKey()).address;
    const merchant = (await (await fetch(`${first.api}/v1/projects/${project.data.project.id}/merchants`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'm', payTo }) })).json()) as { data: { id: string } };
    const key = { authorization: `Bearer ${project.data.apiKey.secret}`, 'content-type': 'application/json' };
    const intent = (await (await fetch(`${first.api}/v1/payment-intents`, { method: 'POST', headers: key, body: JSON.stringify({ merchantId: merchant.data.id, amountUsdCents: 150, externalId: 'crash-order' }) })).json()) as { id: string };
    const payer = privateKeyToAccount(generatePrivateKey());
    await admin(data.dataDir, 'dev.fund', { address: payer.address, amount: '5' });
    const payUrl = `${first.api}/v1/payment-intents/${intent.id}/pay`;
    const challengeResponse = await fetch(payUrl, { method: 'POST' });
    const challenge = readPaymentRequired((n) => challengeResponse.headers.get(n), await challengeResponse.json());
    const { header, payload } = await signPayment(payer, challenge);
    const nonce = (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
    const crash = await sendThroughCrash(first, () => fetch(payUrl, { method: 'POST', headers: { 'payment-signature': header } }));
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const moved = await movedFor(second.rpc, payer.address, nonce, payTo);
      expect(moved.transfers).toBeLessThanOrEqual(1);
      const read = async () => (await (await fetch(`${second.api}/v1/payment-intents/${intent.id}`, { headers: key })).json()) as { status: string; transactionHash: string | null };
      if (moved.transfers === 1) {
        const settled = await eventually(async () => {
          await fetch(`${second.api}/v1/payment-intents/${intent.id}/reconcile`, { method: 'POST', headers: { authorization: key.authorization } });
          const current = await read();
          return current.status === 'settled' ? current : null;
        });
        expect(settled, JSON.stringify(await read())).toMatchObject({ status: 'settled', transactionHash: moved.tx });
      }
      expect(ALLOWED_INTENT_STATES).toContain((await read()).status);
      // Paying again with the same signature never charges twice.
      await fetch(`${second.api}/v1/payment-intents/${intent.id}/pay`, { method: 'POST', headers: { 'payment-signature': header } });
      expect((await movedFor(second.rpc, payer.address, nonce, payTo)).transfers).toBe(moved.transfers);
    } finally {
      await stop(second);
    }
    pointDone();
  }, 120_000);
});
