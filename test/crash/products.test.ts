// Crash points of image upload, credit top-up, relay broadcast and wallet pay-and-call.
// The harness (test/crash/harness.ts) starts and kills the real `tollgate serve`; see its header for what each point must end with.
import { type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { readPaymentRequired, signPayment } from '../../src/x402/client.js';
import { mppxCredential } from '../relay/mppx-client.js';
import { jpegOf, storagePayer, uploadForm } from '../storage/helpers.js';
import { describe, expect, it } from 'vitest';
import { crashHarness, USDG, freshData, serve, stop, sendThroughCrash, admin, eventually, movedFor, flows, transfersOf, chainRpc } from './harness.js';

const { pointDone } = crashHarness('crash-points products');

describe('crash points of a paid image upload', () => {
  it.each(flows.storage)('upload killed at %s: one transfer at most; the worker makes the order paid (then a repeat fulfils it) or frees it', async (point) => {
    const data = await freshData();
    const first = await serve(data, point);
    const payer = storagePayer();
    await admin(data.dataDir, 'dev.fund', { address: payer.account.address, amount: '1' });
    const image = await jpegOf(20);
    const key = crypto.randomUUID();
    const post = (api: string, headers: Record<string, string> = {}) =>
      fetch(`${api}/v1/ipfs/upload`, { method: 'POST', headers: { 'idempotency-key': key, ...headers }, body: uploadForm(image) });
    const challengeResponse = await post(first.api);
    expect(challengeResponse.status).toBe(402);
    const required = payer.http.getPaymentRequiredResponse((n) => challengeResponse.headers.get(n), await challengeResponse.json());
    const payload = await payer.http.createPaymentPayload(required);
    const nonce = (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
    const payTo = required.accepts[0]!.payTo as Address;
    const orderId = new URL(required.resource.url).searchParams.get('orderId')!;
    const crash = await sendThroughCrash(first, () => post(first.api, payer.http.encodePaymentSignatureHeader(payload) as Record<string, string>));
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const order = async () => ((await (await fetch(`${second.api}/v1/ipfs/orders/${orderId}`, { headers: { 'idempotency-key': key } })).json()) as { data: { status: string; transactionHash: string | null } }).data;
      const moved = await movedFor(second.rpc, payer.account.address, nonce, payTo);
      expect(moved.transfers).toBe(point === 'storage.after-claim' ? 0 : 1);
      // Right after the restart the order is still held for its payment; once money moved, the restarted
      // worker may already have found it (a race the test must not lose): paid, never freed or lost.
      const held = (await order()).status;
      if (moved.transfers === 1) expect(['payment_pending', 'paid']).toContain(held);
      else expect(held).toBe('payment_pending');
      if (moved.transfers === 1) {
        const paid = await eventually(async () => ((await order()).status === 'paid' ? order() : null));
        expect(paid, JSON.stringify(await order())).toMatchObject({ status: 'paid', transactionHash: moved.tx });
        expect((await post(second.api)).status).toBe(200);
        expect((await order()).status).toBe('fulfilled');
      } else {
        // Nothing moved: once the authorization's validBefore has passed on chain, the order is free again.
        await chainRpc(second.rpc, 'evm_increaseTime', [3_700]);
        await chainRpc(second.rpc, 'evm_mine', []);
        const freed = await eventually(async () => ((await order()).status === 'awaiting_payment' ? order() : null));
        expect(freed, JSON.stringify(await order())).toMatchObject({ status: 'awaiting_payment', transactionHash: null });
      }
      expect((await movedFor(second.rpc, payer.account.address, nonce, payTo)).transfers).toBe(moved.transfers);
    } finally {
      await stop(second);
    }
    pointDone();
  }, 120_000);
});

describe('crash points of a credit top-up', () => {
  it.each(flows.credits)('top-up killed at %s: one transfer at most; the worker credits it once, or fails it once it can never pay', async (point) => {
    const data = await freshData();
    const first = await serve(data, point);
    const { token } = await admin(data.dataDir, 'dev.token', { sub: 'crash-buyer' });
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const payer = privateKeyToAccount(generatePrivateKey());
    await admin(data.dataDir, 'dev.fund', { address: payer.address, amount: '5' });
    const topUp = (api: string, extra: Record<string, string> = {}) =>
      fetch(`${api}/credits/top-up`, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify({ amountUsdCents: 100 }) });
    const challengeResponse = await topUp(first.api);
    expect(challengeResponse.status).toBe(402);
    const challenge = readPaymentRequired((n) => challengeResponse.headers.get(n), await challengeResponse.json());
    const { header, payload } = await signPayment(payer, challenge);
    const nonce = (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
    const payTo = challenge.accepts[0]!.payTo as Address;
    const crash = await sendThroughCrash(first, () => topUp(first.api, { 'payment-signature': header }));
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const balance = async () => ((await (await fetch(`${second.api}/credits`, { headers })).json()) as { data: { balanceUsdCents: number } }).data.balanceUsdCents;
      const moved = await movedFor(second.rpc, payer.address, nonce, payTo);
      expect(moved.transfers).toBe(point === 'credits.after-claim' ? 0 : 1);
      if (moved.transfers === 1) {
        expect(await eventually(async () => (await balance()) === 100), 'credited by the worker').toBe(true);
      } else {
        // Nothing moved: once validBefore has passed on chain the top-up fails, and the payment can never credit.
        await chainRpc(second.rpc, 'evm_increaseTime', [3_700]);
        await chainRpc(second.rpc, 'evm_mine', []);
        const refused = await eventually(async () => {
          const again = await topUp(second.api, { 'payment-signature': header });
          return again.status === 409 && ((await again.json()) as { data: { reason: string } }).data.reason === 'payment_authorization_already_used';
        });
        expect(refused, 'the dead authorization is refused').toBe(true);
      }
      // The same payment again never credits or moves twice.
      await topUp(second.api, { 'payment-signature': header });
      await new Promise((resolve) => setTimeout(resolve, 700));
      expect(await balance()).toBe(moved.transfers * 100);
      expect((await movedFor(second.rpc, payer.address, nonce, payTo)).transfers).toBe(moved.transfers);
    } finally {
      await stop(second);
    }
    pointDone();
  }, 120_000);
});

describe('crash points of a relay broadcast', () => {
  it.each(flows.relay)('broadcast killed at %s: the retry with the same key answers the receipt of the one transfer', async (point) => {
    const data = await freshData();
    const first = await serve(data, point);
    const account = privateKeyToAccount(generatePrivateKey());
    await admin(data.dataDir, 'dev.fund', { address: account.address, amount: '1' });
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const built = await mppxCredential({ account, amount: '10000', recipient });
    const nonce = (built.credential.payload as { nonce: Hex }).nonce;
    const broadcast = (relay: string) =>
      fetch(`${relay}/v1/mpp/broadcast`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': 'crash-key-1' }, body: JSON.stringify({ credential: built.serialized, request: built.request }) });
    const crash = await sendThroughCrash(first, () => broadcast(first.relay));
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const moved = await movedFor(second.rpc, account.address, nonce, recipient);
      expect(moved.transfers).toBe(point === 'relay.after-record' ? 0 : 1);
      // The dead request's record is taken over once it is RELAY_TAKEOVER_AFTER_SECONDS old.
      const answer = await eventually(async () => {
        const res = await broadcast(second.relay);
        return res.status === 503 ? null : { status: res.status, body: (await res.json()) as { receipt?: { reference: string } } };
      });
      const after = await movedFor(second.rpc, account.address, nonce, recipient);
      expect(after.transfers).toBe(1);
      expect(answer).toMatchObject({ status: 200, body: { receipt: { reference: after.tx } } });
    } finally {
      await stop(second);
    }
    pointDone();
  }, 120_000);
});

describe('crash points of wallet pay-and-call', () => {
  it.each(flows.payAndCall)('pay-and-call killed at %s: the payment row ends as the chain says, one transfer at most', async (point) => {
    const data = await freshData();
    const first = await serve(data, point);
    const { secret: mgmt } = await admin(data.dataDir, 'mgmt-credential.create', { name: 'crash' });
    const created = (await (await fetch(`${first.api}/v1/wallets`, { method: 'POST', headers: { authorization: `Bearer ${mgmt}`, 'content-type': 'application/json' }, body: JSON.stringify({ externalId: 'crash-agent', name: 'crash' }) })).json()) as {
      data: { wallet: { address: Address; status: string }; credential: { secret: string } };
    };
    expect(created.data.wallet.status).toBe('active');
    const payer = created.data.wallet.address;
    const walletAuth = { authorization: `Bearer ${created.data.credential.secret}`, 'content-type': 'application/json' };
    await admin(data.dataDir, 'dev.fund', { address: payer, amount: '1' });
    const challengeResponse = await fetch(`${first.api}/x402-test/ping`);
    const payTo = readPaymentRequired((n) => challengeResponse.headers.get(n), await challengeResponse.json()).accepts[0]!.payTo as Address;
    // The embedded instance allow-lists its own api origin, so the wallet can pay its ping.
    const body = JSON.stringify({ url: `${first.api}/x402-test/ping`, maxPayment: { network: 'eip155:4663', asset: USDG, amount: '100' } });
    const crash = await sendThroughCrash(first, () => fetch(`${first.api}/v1/wallets/me/pay-and-call`, { method: 'POST', headers: walletAuth, body }));
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const payments = async () => ((await (await fetch(`${second.api}/v1/wallets/me/payments`, { headers: walletAuth })).json()) as { data: { status: string; transaction: string | null; error: string | null }[] }).data;
      const moved = await transfersOf(second.rpc, payer, payTo);
      // Killed before the signature left (reserved, or signed): nothing moved. After the upstream (our ping) answered: it settled.
      expect(moved.transfers).toBe(point === 'pay-and-call.after-upstream' ? 1 : 0);
      // Every signature that left the process has its row: one row, recorded before the crash.
      expect(await payments()).toHaveLength(1);
      if (moved.transfers === 1) {
        // Money moved and the row was not final: the worker finds the transfer on chain.
        const settled = await eventually(async () => ((await payments())[0]!.status === 'settled' ? (await payments())[0] : null));
        expect(settled, JSON.stringify(await payments())).toMatchObject({ status: 'settled', transaction: moved.tx });
      } else {
        // Nothing moved: the payment stays open (never settled) until its authorization can no longer be
        // used; past any validBefore the wallet could have signed, the chain's time makes it failed.
        expect(['pending', 'unknown']).toContain((await payments())[0]!.status);
        await chainRpc(second.rpc, 'evm_increaseTime', [3_700]);
        await chainRpc(second.rpc, 'evm_mine', []);
        const ended = await eventually(async () => ((await payments())[0]!.status === 'failed' ? (await payments())[0] : null));
        expect(ended, JSON.stringify(await payments())).toMatchObject({ status: 'failed', transaction: null });
      }
      expect(await transfersOf(second.rpc, payer, payTo)).toEqual(moved);
    } finally {
      await stop(second);
    }
    pointDone();
  }, 120_000);
});
