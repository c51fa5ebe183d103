import { createHash } from 'node:crypto';
// What paid endpoints see when parts are down: "facilitator unreachable" (503, nothing happened),
// "outcome unknown" (503, money may have moved), and a dead chain RPC (503, never a wrong reason).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PaymentRequired } from '@x402/core/types';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readPaymentRequired, signPayment } from '../../src/x402/client.js';
import { httpFacilitatorClient } from '../../src/x402/server/facilitator-clients.js';
import { X402Service } from '../../src/x402/server/service.js';
import { DEFAULT_ASSET } from '../../src/chain/registry.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { fundedPayer, randomAddress, signAuthorization } from './support.js';

describe('HTTP facilitator client: unavailable vs unknown', () => {
  let server: http.Server;
  let url: string;
  let behaviour: (path: string, res: http.ServerResponse) => void;
  let bodies: string[] = [];
  beforeAll(async () => {
    server = http.createServer(async (req, res) => {
      let body = '';
      for await (const chunk of req) body += chunk;
      bodies.push(body);
      behaviour(req.url ?? '', res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  // A timeout long enough for any answer on a loaded machine; the test of a silent facilitator passes a short one.
  const service = (target: () => string, timeoutMs = 10_000) =>
    new X402Service({
      network: 'eip155:4663',
      asset: DEFAULT_ASSET,
      serviceName: 'Tollgate',
      apiBaseUrl: () => 'http://api',
      facilitator: () => httpFacilitatorClient({ url: target, verifyTimeoutMs: timeoutMs, settleTimeoutMs: timeoutMs }),
      keyedHash: (value) => createHash('sha256').update(value).digest('hex'),
    });
  const requirements = () =>
    service(() => url).requirements({ url: 'http://api/x', description: 'x', mimeType: 'application/json', amount: '100', payTo: randomAddress() });
  const json = (status: number, body: unknown) => (_: string, res: http.ServerResponse) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const payload = async () => {
    const { generatePrivateKey, privateKeyToAccount } = await import('viem/accounts');
    return signAuthorization(privateKeyToAccount(generatePrivateKey()), requirements());
  };

  it('a refused connection is unavailable for verify and settle', async () => {
    const port = await closedPort();
    const closed = service(() => `http://127.0.0.1:${port}`);
    const p = await payload();
    expect(await closed.verify(p, p.accepted)).toMatchObject({ kind: 'unavailable' });
    expect(await closed.settle(p, p.accepted)).toMatchObject({ kind: 'unavailable' });
  });

  it("our facilitator's 503 chain_unavailable is unavailable; a 500 or a timeout on settle is unknown", async () => {
    const s = service(() => url);
    const p = await payload();
    behaviour = json(503, { error: { code: 'chain_unavailable' } });
    expect(await s.verify(p, p.accepted)).toMatchObject({ kind: 'unavailable' });
    expect(await s.settle(p, p.accepted)).toMatchObject({ kind: 'unavailable' });
    behaviour = json(500, { error: { code: 'internal_error' } });
    expect(await s.settle(p, p.accepted)).toMatchObject({ kind: 'unknown' });
    behaviour = () => {}; // never answers
    expect(await service(() => url, 300).settle(p, p.accepted)).toMatchObject({ kind: 'unknown' });
  });

  it('a settle 5xx is unknown unless our facilitator says nothing was sent; 429 is unavailable; verify keeps 5xx unavailable', async () => {
    const s = service(() => url);
    const p = await payload();
    // A proxy's 502/503 may come after the facilitator broadcast.
    for (const status of [502, 503, 504]) {
      behaviour = (_, res) => res.writeHead(status, { 'content-type': 'text/html' }).end('<html>Bad Gateway</html>');
      expect(await s.settle(p, p.accepted)).toMatchObject({ kind: 'unknown' });
      expect(await s.verify(p, p.accepted)).toMatchObject({ kind: 'unavailable' });
    }
    behaviour = json(503, { error: { code: 'service_unavailable' } });
    expect(await s.settle(p, p.accepted)).toMatchObject({ kind: 'unknown' });
    behaviour = (_, res) => res.socket!.destroy(); // dropped after the request was written
    expect(await s.settle(p, p.accepted)).toMatchObject({ kind: 'unknown' });
    behaviour = json(429, { error: { code: 'rate_limited' } });
    expect(await s.settle(p, p.accepted)).toMatchObject({ kind: 'unavailable' });
    expect(await s.verify(p, p.accepted)).toMatchObject({ kind: 'unavailable' });
  });

  it('an answer the JSON guard refuses (U+0000, nesting past 32) reads as no answer: settle unknown, verify unavailable', async () => {
    const s = service(() => url);
    const p = await payload();
    const hostile = [
      '{"success":false,"errorReason":"invalid\\u0000reason","transaction":"","network":"eip155:4663"}',
      `${'{"a":'.repeat(40)}1${'}'.repeat(40)}`,
    ];
    for (const body of hostile) {
      behaviour = (_, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      expect(await s.settle(p, p.accepted)).toMatchObject({ kind: 'unknown' });
      expect(await s.verify(p, p.accepted)).toMatchObject({ kind: 'unavailable' });
    }
  });

  it('a refusal answering the retry after an unknown first attempt is unknown, not failed', async () => {
    const s = service(() => url);
    const p = await payload();
    // A facilitator without a settlement record: the first call went through, the retry sees the nonce used.
    const answers = [
      json(500, { error: { code: 'internal_error' } }),
      json(200, { success: false, errorReason: 'invalid_exact_evm_nonce_already_used', transaction: '', network: 'eip155:4663' }),
    ];
    let calls = 0;
    behaviour = (path, res) => answers[Math.min(calls++, answers.length - 1)](path, res);
    expect(await s.settle(p, p.accepted)).toMatchObject({ kind: 'unknown', transaction: null });
    expect(calls).toBe(2);
    // Without an earlier attempt of ours, the same refusal is definitive.
    behaviour = answers[1];
    expect(await s.settle(p, p.accepted)).toMatchObject({ kind: 'failed', reason: 'invalid_exact_evm_nonce_already_used' });
  });

  it('settlement_pending is retried once, then unknown with the hash', async () => {
    const s = service(() => url);
    const p = await payload();
    let calls = 0;
    const tx = `0x${'ab'.repeat(32)}`;
    behaviour = (path, res) => {
      calls += 1;
      json(200, { success: false, errorReason: 'settlement_pending', transaction: tx, network: 'eip155:4663' })(path, res);
    };
    expect(await s.settle(p, p.accepted)).toEqual({ kind: 'unknown', transaction: tx, message: 'settlement pending' });
    expect(calls).toBe(2);
  });

  it('a settle carries our own payment-identifier, the same on our retry, never the client\'s', async () => {
    const s = service(() => url);
    const p = { ...(await payload()), extensions: { 'payment-identifier': { info: { required: false, id: 'pay_chosen_by_client_01' } } } };
    behaviour = json(200, { success: false, errorReason: 'settlement_pending', transaction: `0x${'ab'.repeat(32)}`, network: 'eip155:4663' });
    bodies = [];
    await s.settle(p, p.accepted);
    const ids = bodies.map((b) => JSON.parse(b).paymentPayload.extensions['payment-identifier'].info.id);
    expect(ids).toHaveLength(2);
    expect(ids[0]).toMatch(/^tg_[0-9a-f]{32}$/);
    expect(ids[1]).toBe(ids[0]);
    await s.settle(p, p.accepted);
    expect(JSON.parse(bodies[2]!).paymentPayload.extensions['payment-identifier'].info.id).not.toBe(ids[0]);
  });

  it('a definitive answer passes through as the facilitator sent it', async () => {
    const s = service(() => url);
    const p = await payload();
    const answer = { success: true, transaction: `0x${'cd'.repeat(32)}`, network: 'eip155:4663', payer: '0x1' };
    behaviour = json(200, answer);
    expect(await s.settle(p, p.accepted)).toEqual({ kind: 'settled', transaction: answer.transaction, payer: '0x1', response: answer });
    behaviour = json(200, { isValid: false, invalidReason: 'invalid_exact_evm_signature' });
    expect(await s.verify(p, p.accepted)).toMatchObject({ kind: 'invalid', reason: 'invalid_exact_evm_signature' });
  });
});

describe('paid endpoint with the facilitator unreachable', () => {
  let app: TestApp;
  afterEach(async () => app?.close());

  it('answers 503 facilitator_unavailable and moves nothing', async () => {
    app = await buildTestApp({ env: { FACILITATOR_URL: `http://127.0.0.1:${await closedPort()}` } });
    const payer = await fundedPayer(app, '1');
    const pingUrl = `${app.urls.api}/x402-test/ping`;
    const first = await fetch(pingUrl);
    const { header } = await signPayment(payer, readPaymentRequired((n) => first.headers.get(n), await first.json()));
    const res = await fetch(pingUrl, { headers: { 'PAYMENT-SIGNATURE': header } });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await res.json()).toEqual({ error: { code: 'facilitator_unavailable', message: expect.any(String) } });
    expect(await app.ctx.chain.devchain!.balanceOf(payer.address)).toBe(1_000_000n);
  });

  it('with the chain RPC down, /verify answers 503 and ping answers 503 (no misleading reason)', async () => {
    app = await buildTestApp();
    const payer = await fundedPayer(app, '1');
    const pingUrl = `${app.urls.api}/x402-test/ping`;
    const first = await fetch(pingUrl);
    const challenge = readPaymentRequired((n) => first.headers.get(n), (await first.json()) as PaymentRequired);
    const { header, payload } = await signPayment(payer, challenge);
    await app.ctx.chain.devchain!.stop();

    const verify = await fetch(`${app.urls.facilitator}/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: challenge.accepts[0] }),
    });
    expect(verify.status).toBe(503);
    expect(((await verify.json()) as { error: { code: string } }).error.code).toBe('chain_unavailable');
    const res = await fetch(pingUrl, { headers: { 'PAYMENT-SIGNATURE': header } });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('facilitator_unavailable');
    // Give any abandoned SDK promise time to reject: vitest fails the run on an unhandled rejection.
    await new Promise((resolve) => setTimeout(resolve, 500));
  });
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
