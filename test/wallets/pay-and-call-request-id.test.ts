// The request id travels through pay-and-call: the upstream (a real listener on loopback) sees the id of
// the request that asked on both the unpaid and the paid request, and the payment's log line carries it.
// Each call's outcome is counted on /metrics.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/platform/request-context.js';
import type { TestApp } from '../helpers/test-app.js';
import { challenge, checkPayment, maxPayment, NETWORK, PAY_TO, requirement, settled, USDG } from './fake-x402.js';
import { buildWalletsApp, call, createWallet, freePort, startUpstream, type Upstream } from './helpers.js';

interface LogLine {
  msg: string;
  reqId?: string;
  paymentId?: string;
}

let upstream: Upstream;
let closedPort: number;
let app: TestApp;
let mgmt: string;
let secret: string;
const lines: LogLine[] = [];

beforeAll(async () => {
  upstream = await startUpstream(async (req, res) => {
    if (req.url === '/free') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('free');
    if (req.url === '/refuses') return challenge(res, [requirement('10')], 'invalid_exact_evm_insufficient_balance');
    if ((await checkPayment(req))?.valid) return settled(res, { paid: true });
    challenge(res, [requirement('10')]);
  });
  closedPort = await freePort();
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  app = await buildWalletsApp({ env: { PAY_AND_CALL_ALLOW_HOSTS: `${upstream.host}, 127.0.0.1:${closedPort}` }, log: createLogger('info', sink) });
  mgmt = await app.mgmtSecret();
  ({ secret } = await createWallet(app, mgmt, 'request-id-payer'));
}, 120_000);
afterAll(async () => {
  await app?.close();
  await upstream?.close();
});

/** Pay-and-call over real HTTP, as a client would call it. */
async function payAndCall(path: string, options: { requestId?: string; credential?: string; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${app.urls.api}/v1/wallets/me/pay-and-call`, {
    method: 'POST',
    headers: { authorization: `Bearer ${options.credential ?? secret}`, 'content-type': 'application/json', ...(options.requestId ? { 'x-request-id': options.requestId } : {}) },
    body: JSON.stringify({ url: `${upstream.origin}${path}`, maxPayment: maxPayment('1000'), headers: options.headers }),
  });
  return { status: response.status, requestId: response.headers.get('x-request-id'), body: (await response.json()) as { data: { payment?: { id: string } } } };
}

describe('request ids through pay-and-call', () => {
  it("sends the caller's request id upstream on the unpaid and the paid request, and logs it with the payment", async () => {
    upstream.requests.length = 0;
    const requestId = `trace-pay-${Date.now()}`;
    // A header the caller asks to forward does not replace the request's own id.
    const answer = await payAndCall('/paid', { requestId, headers: { 'X-Request-Id': 'forged-by-the-body' } });
    expect(answer.status).toBe(200);
    expect(answer.requestId).toBe(requestId);
    const paymentId = answer.body.data.payment!.id;

    expect(upstream.requests).toHaveLength(2);
    const [unpaid, paid] = upstream.requests;
    expect(unpaid!.headers['payment-signature']).toBeUndefined();
    expect(paid!.headers['payment-signature']).toBeDefined();
    expect([unpaid!.headers['x-request-id'], paid!.headers['x-request-id']]).toEqual([requestId, requestId]);

    const logged = lines.filter((line) => line.msg === 'pay-and-call sending a signed payment' && line.paymentId === paymentId);
    expect(logged).toHaveLength(1);
    expect(logged[0]!.reqId).toBe(requestId);
  });

  it('sends the id it made up when the caller sent none: the one its answer carries', async () => {
    upstream.requests.length = 0;
    const answer = await payAndCall('/paid');
    expect(answer.status).toBe(200);
    expect(answer.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(upstream.requests.map((request) => request.headers['x-request-id'])).toEqual([answer.requestId, answer.requestId]);
    expect(lines.find((line) => line.paymentId === answer.body.data.payment!.id)?.reqId).toBe(answer.requestId);
  });
});

describe('pay-and-call outcomes on /metrics', () => {
  it('counts each call once by how it ended', async () => {
    const count = async () => {
      const text = await (await fetch(`${app.urls.api}/metrics`)).text();
      return Object.fromEntries([...text.matchAll(/^tollgate_pay_and_call_total\{outcome="(\w+)"\} (\d+)$/gm)].map(([, outcome, value]) => [outcome, Number(value)]));
    };
    const before = await count();
    expect(before.paid).toBe(2); // the two calls above

    expect((await payAndCall('/free')).status).toBe(200);
    expect((await payAndCall('/paid')).status).toBe(200);
    expect((await payAndCall('/refuses')).status).toBe(502);
    upstream.requests.length = 0;
    const unreachable = await fetch(`${app.urls.api}/v1/wallets/me/pay-and-call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${closedPort}/x`, maxPayment: maxPayment('1000') }),
    });
    expect(unreachable.status).toBe(502);

    const refusing = await createWallet(app, mgmt, 'request-id-refused');
    expect((await call(app, 'PUT', `/v1/wallets/${refusing.wallet.id}/policy`, mgmt, { denyPayTo: [PAY_TO] })).status).toBe(200);
    expect((await payAndCall('/paid', { credential: refusing.secret })).status).toBe(409);
    const asking = await createWallet(app, mgmt, 'request-id-approval');
    expect((await call(app, 'PUT', `/v1/wallets/${asking.wallet.id}/policy`, mgmt, { approvalAbove: { network: NETWORK, asset: USDG, amount: '1' } })).status).toBe(200);
    expect((await payAndCall('/paid', { credential: asking.secret })).status).toBe(202);

    expect(await count()).toEqual({ free: 1, paid: 3, approval: 1, refused: 1, rejected: 1, error: 1 });
  });
});
