// The MPP payment relay on the devchain, with credentials built by mppx's own server and EVM client:
// validate accepts without submitting, broadcast settles once per key and answers an mppx receipt, and
// every code of the spec's relay errors table is answered in the relay's shape. Money is read on chain.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Receipt } from 'mppx';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moduleFactories } from '../../src/modules/index.js';
import type { ModuleFactory } from '../../src/modules/module.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { transfersForNonce } from '../x402/support.js';
import { mppxCredential, USDG_4663 } from './mppx-client.js';
import { AMOUNT, credentialFor, expectRelayError, nonceOf, post } from './support.js';

/** A route on the relay origin that fails inside, to see the relay's 500 as a client does. */
const boom: ModuleFactory = () => ({ name: 'boom', routes: { relay: (app) => void app.get('/boom', async () => Promise.reject(new Error('internal detail'))) } });

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp({ factories: [...moduleFactories, boom] });
});
afterAll(async () => app?.close());

describe('GET /supported', () => {
  it('declares evm/charge with authorization credentials and USDG on eip155:4663', async () => {
    const res = await fetch(`${app.urls.relay}/supported`);
    expect(await res.json()).toEqual({
      methods: [{ method: 'evm', intent: 'charge', credentialTypes: ['authorization'] }],
      assets: [{ network: 'eip155:4663', chainId: 4663, address: USDG_4663.address, symbol: 'USDG', decimals: 6, maxTimeoutSeconds: 300 }],
    });
  });
});

describe('a credential from the mppx client', () => {
  it('validate accepts it (object and serialized forms) without submitting; broadcast settles it once and answers an mppx receipt', async () => {
    const built = await credentialFor(app);
    const before = await app.ctx.chain.devchain!.balanceOf(built.recipient);
    for (const credential of [built.credential, built.serialized]) {
      const res = await post(app, '/v1/mpp/validate', { credential, request: built.request });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        success: true,
        accepted: true,
        method: 'evm',
        intent: 'charge',
        source: `did:pkh:eip155:4663:${built.account.address}`,
        details: {
          challengeId: built.challenge.id,
          network: 'eip155:4663',
          chainId: 4663,
          currency: USDG_4663.address,
          symbol: 'USDG',
          decimals: 6,
          amount: AMOUNT,
          recipient: built.recipient,
          payer: built.account.address,
        },
      });
    }
    expect(await app.ctx.chain.devchain!.balanceOf(built.recipient)).toBe(before);

    const res = await post(app, '/v1/mpp/broadcast', { credential: built.serialized, request: built.request }, { 'idempotency-key': 'order-0001' });
    const body = (await res.json()) as { success: boolean; receipt: Record<string, unknown> };
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.receipt).toMatchObject({ challengeId: built.challenge.id, chainId: 4663, method: 'evm', status: 'success' });
    expect(Receipt.deserialize(Receipt.serialize(body.receipt as Receipt.Receipt))).toEqual(body.receipt);
    expect((await app.ctx.chain.devchain!.balanceOf(built.recipient)) - before).toBe(BigInt(AMOUNT));
    const tx = await app.ctx.chain.publicClient.getTransactionReceipt({ hash: body.receipt.reference as `0x${string}` });
    expect(tx.status).toBe('success');

    // The same key again: the same receipt, nothing sent. The credential is spent for anyone else.
    const again = await post(app, '/v1/mpp/broadcast', built.body, { 'idempotency-key': 'order-0001' });
    expect(await again.json()).toEqual(body);
    await expectRelayError(await post(app, '/v1/mpp/validate', built.body), 422, 'authorization_already_used');
    await expectRelayError(await post(app, '/v1/mpp/broadcast', built.body, { 'idempotency-key': 'order-0002' }), 422, 'authorization_already_used');
    expect(await transfersForNonce(app, built.account.address, nonceOf(built))).toBe(1);
  });

  it('20 concurrent broadcasts with one key: one transfer, twenty identical receipts', async () => {
    const built = await credentialFor(app);
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(app, '/v1/mpp/broadcast', built.body, { 'idempotency-key': 'concurrent-key-1' })));
    const bodies = await Promise.all(answers.map((a) => a.json()));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    for (const body of bodies) expect(body).toEqual(bodies[0]);
    expect(await transfersForNonce(app, built.account.address, nonceOf(built))).toBe(1);
  });
});

describe('one credential, many keys', () => {
  it('10 concurrent broadcasts of one credential under 10 keys: one receipt, the rest authorization_already_used, one transfer', async () => {
    const built = await credentialFor(app);
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => post(app, '/v1/mpp/broadcast', built.body, { 'idempotency-key': `many-keys-${i}-x` })));
    const bodies = (await Promise.all(answers.map((a) => a.json()))) as Array<{ success: boolean; error?: { code: string } }>;
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(bodies.filter((b) => !b.success).map((b) => b.error?.code)).toEqual(Array(9).fill('authorization_already_used'));
    expect(await transfersForNonce(app, built.account.address, nonceOf(built))).toBe(1);
  });
});

describe('the relay errors table', () => {
  it('400 invalid_json, invalid_request, invalid_credential, invalid_payment_request, invalid_idempotency_key', async () => {
    const built = await credentialFor(app);
    await expectRelayError(await post(app, '/v1/mpp/validate', '{"credential":'), 400, 'invalid_json');
    await expectRelayError(await post(app, '/v1/mpp/validate', []), 400, 'invalid_request');
    await expectRelayError(await post(app, '/v1/mpp/validate', { request: built.request }), 400, 'invalid_request');
    await expectRelayError(await post(app, '/v1/mpp/validate', { credential: 'Payment not-base64-json', request: built.request }), 400, 'invalid_credential');
    await expectRelayError(await post(app, '/v1/mpp/validate', { credential: built.credential, request: { amount: 'ten' } }), 400, 'invalid_payment_request');
    // JSON nested thousands deep inside the credential's base64url request: past the body's guard, still a 400.
    const deep = Buffer.from(`{"amount":"10000","extra":${'['.repeat(5000)}${']'.repeat(5000)}}`).toString('base64url');
    const hostile = { ...(built.credential as unknown as Record<string, unknown>), challenge: { ...(built.credential.challenge as unknown as Record<string, unknown>), request: deep } };
    await expectRelayError(await post(app, '/v1/mpp/validate', { credential: hostile, request: built.request }), 400, 'invalid_credential');
    const serializedDeep = `Payment ${Buffer.from(JSON.stringify({ ...hostile })).toString('base64url')}`;
    await expectRelayError(await post(app, '/v1/mpp/validate', { credential: serializedDeep, request: built.request }), 400, 'invalid_credential');
    await expectRelayError(await post(app, '/v1/mpp/broadcast', built.body, { 'idempotency-key': 'short' }), 400, 'invalid_idempotency_key');
    await expectRelayError(await post(app, '/v1/mpp/broadcast', built.body), 400, 'invalid_idempotency_key');
  });

  it('409 idempotency_conflict: the same payer’s key with another credential; 413 request_too_large over 64 KiB', async () => {
    const first = await credentialFor(app);
    const second = await credentialFor(app, { account: first.account });
    expect((await post(app, '/v1/mpp/broadcast', first.body, { 'idempotency-key': 'conflict-key-1' })).status).toBe(200);
    await expectRelayError(await post(app, '/v1/mpp/broadcast', second.body, { 'idempotency-key': 'conflict-key-1' }), 409, 'idempotency_conflict');
    expect(await transfersForNonce(app, second.account.address, nonceOf(second))).toBe(0);
    const padded = { ...second.body, padding: 'x'.repeat(64 * 1024) };
    await expectRelayError(await post(app, '/v1/mpp/validate', padded), 413, 'request_too_large');
  });

  it('422 unsupported_method, unsupported_asset, request_mismatch, challenge_binding_mismatch', async () => {
    const built = await credentialFor(app);
    const credential = built.credential as unknown as { challenge: Record<string, unknown>; payload: Record<string, unknown>; source?: string };
    const withChallenge = (change: Record<string, unknown>) => ({ credential: { ...credential, challenge: { ...credential.challenge, ...change } }, request: built.request });
    await expectRelayError(await post(app, '/v1/mpp/validate', withChallenge({ method: 'tempo' })), 422, 'unsupported_method');
    const otherToken = await mppxCredential({ account: built.account, amount: AMOUNT, recipient: built.recipient, asset: { ...USDG_4663, address: '0x0000000000000000000000000000000000000bad' } });
    await expectRelayError(await post(app, '/v1/mpp/validate', { credential: otherToken.credential, request: otherToken.request }), 422, 'unsupported_asset');
    await expectRelayError(await post(app, '/v1/mpp/validate', { credential: built.credential, request: { ...built.request, amount: '20000' } }), 422, 'request_mismatch');
    await expectRelayError(await post(app, '/v1/mpp/validate', withChallenge({ id: `${String(credential.challenge.id)}x` })), 422, 'challenge_binding_mismatch');
  });

  it('422 invalid_signature, insufficient_balance, authorization_already_used (above); a refusal moves nothing', async () => {
    const built = await credentialFor(app);
    const credential = built.credential as unknown as { payload: { signature: string } };
    const signature = credential.payload.signature;
    const flipped = `${signature.slice(0, 10)}${signature[10] === '0' ? '1' : '0'}${signature.slice(11)}`;
    const forged = { credential: { ...built.credential, payload: { ...credential.payload, signature: flipped } }, request: built.request };
    await expectRelayError(await post(app, '/v1/mpp/validate', forged), 422, 'invalid_signature');
    // Broadcast refuses it before writing anything under the payer's name (its key stays free for the payer).
    await expectRelayError(await post(app, '/v1/mpp/broadcast', forged, { 'idempotency-key': 'forged-key-1' }), 422, 'invalid_signature');
    expect(await transfersForNonce(app, built.account.address, nonceOf(built))).toBe(0);
    expect((await post(app, '/v1/mpp/broadcast', built.body, { 'idempotency-key': 'forged-key-1' })).status).toBe(200);
    const broke = await credentialFor(app, { fund: '0' });
    await expectRelayError(await post(app, '/v1/mpp/validate', broke.body), 422, 'insufficient_balance');
    await expectRelayError(await post(app, '/v1/mpp/broadcast', broke.body, { 'idempotency-key': 'broke-key-01' }), 422, 'insufficient_balance');
    // A refusal before anything was submitted is not remembered: after a top-up the same key settles it.
    await app.ctx.chain.devchain!.fund(broke.account.address, '1');
    expect((await post(app, '/v1/mpp/broadcast', broke.body, { 'idempotency-key': 'broke-key-01' })).status).toBe(200);
    expect(await transfersForNonce(app, built.account.address, nonceOf(built))).toBe(1);
  });

  it('500 internal_relay_error, with no internals in the answer', async () => {
    const res = await fetch(`${app.urls.relay}/boom`);
    const body = await res.text();
    expect(body).not.toContain('internal detail');
    await expectRelayError(new Response(body, { status: res.status }), 500, 'internal_relay_error');
  });
});

describe('503 idempotency_capacity_exceeded', () => {
  let small: TestApp;
  beforeAll(async () => {
    small = await buildTestApp({ env: { RELAY_IDEMPOTENCY_CAPACITY_PER_PAYER: '1' } });
  });
  afterAll(async () => small?.close());

  it('past its own bound a payer’s new key is refused until its oldest record expires; a kept key still answers; another payer is not held up', async () => {
    const first = await credentialFor(small);
    const second = await credentialFor(small, { account: first.account });
    expect((await post(small, '/v1/mpp/broadcast', first.body, { 'idempotency-key': 'capacity-key-1' })).status).toBe(200);
    const refused = await post(small, '/v1/mpp/broadcast', second.body, { 'idempotency-key': 'capacity-key-2' });
    // The first record expires after the retention (72 h): that is when a place frees up.
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(71 * 3600);
    await expectRelayError(refused, 503, 'idempotency_capacity_exceeded');
    expect(await transfersForNonce(small, second.account.address, nonceOf(second))).toBe(0);
    expect((await post(small, '/v1/mpp/broadcast', first.body, { 'idempotency-key': 'capacity-key-1' })).status).toBe(200);

    // Another payer, under any key (the same one too), has its own bound.
    for (const key of ['capacity-key-2', 'capacity-key-1']) {
      const other = await credentialFor(small);
      const res = await post(small, '/v1/mpp/broadcast', other.body, { 'idempotency-key': key });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(await transfersForNonce(small, other.account.address, nonceOf(other))).toBe(1);
    }
  });
});

describe('a receipt lost after broadcast', () => {
  let proxied: TestApp;
  let proxy: http.Server;
  let dropSettleAnswers = false;
  beforeAll(async () => {
    // Between the relay and the facilitator: forwards everything, and can lose /settle answers after the
    // facilitator has acted on them (what a network cut or a dead RPC answer looks like from the relay).
    proxy = http.createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const upstream = await fetch(`${proxied.urls.facilitator}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: req.method === 'POST' ? Buffer.concat(chunks) : undefined });
      const text = await upstream.text();
      if (dropSettleAnswers && req.url === '/settle') return void res.socket?.destroy();
      res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(text);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    proxied = await buildTestApp({ env: { FACILITATOR_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` } });
  });
  afterAll(async () => {
    await proxied?.close();
    proxy?.closeAllConnections();
    await new Promise((resolve) => proxy?.close(resolve));
  });

  it('503 broadcast_outcome_unknown with Retry-After; the retry with the same key returns the receipt from the chain; one transfer', async () => {
    const built = await credentialFor(proxied);
    dropSettleAnswers = true;
    const lost = await post(proxied, '/v1/mpp/broadcast', built.body, { 'idempotency-key': 'lost-receipt-1' });
    expect(lost.headers.get('retry-after')).toBe('5');
    await expectRelayError(lost, 503, 'broadcast_outcome_unknown');
    expect(await transfersForNonce(proxied, built.account.address, nonceOf(built))).toBe(1);

    dropSettleAnswers = false;
    const retry = await post(proxied, '/v1/mpp/broadcast', built.body, { 'idempotency-key': 'lost-receipt-1' });
    const body = (await retry.json()) as { success: boolean; receipt: { reference: string } };
    expect(retry.status, JSON.stringify(body)).toBe(200);
    const [transfer] = await proxied.ctx.chain.publicClient.getContractEvents({
      address: USDG_4663.address,
      abi: [{ type: 'event', name: 'AuthorizationUsed', inputs: [{ name: 'authorizer', type: 'address', indexed: true }, { name: 'nonce', type: 'bytes32', indexed: true }] }],
      eventName: 'AuthorizationUsed',
      args: { authorizer: built.account.address, nonce: nonceOf(built) },
      fromBlock: 0n,
    });
    expect(body.receipt.reference).toBe(transfer!.transactionHash);
    expect(await post(proxied, '/v1/mpp/broadcast', built.body, { 'idempotency-key': 'lost-receipt-1' }).then((r) => r.json())).toEqual(body);
    expect(await transfersForNonce(proxied, built.account.address, nonceOf(built))).toBe(1);
  });
});
