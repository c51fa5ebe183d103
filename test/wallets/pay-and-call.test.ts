import type http from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { decodePaymentSignatureHeader } from '@x402/core/http';
import type { TestApp } from '../helpers/test-app.js';
import { challenge, checkPayment, maxPayment, NETWORK, PAY_TO, requirement, settled, USDG } from './fake-x402.js';
import { buildWalletsApp, call, createWallet, freePort, startUpstream, type Recorded, type Upstream } from './helpers.js';

// Pay-and-call against a stand-in x402 upstream on loopback (allow-listed), no chain needed.

type Handler = (req: Recorded, res: http.ServerResponse) => unknown;
const routes = new Map<string, Handler>();
let upstream: Upstream;
let closedPort: number;
let app: TestApp;
let wallet: { id: string; address: string };
let secret: string;

beforeAll(async () => {
  upstream = await startUpstream((req, res) => {
    const handler = routes.get(req.url.split('?')[0]);
    if (!handler) return void res.writeHead(404).end('no route');
    void handler(req, res);
  });
  closedPort = await freePort();
  app = await buildWalletsApp({
    env: { PAY_AND_CALL_ALLOW_HOSTS: `${upstream.host}, 127.0.0.1:${closedPort}`, PAY_AND_CALL_TIMEOUT_MS: '3000', PAY_AND_CALL_MAX_BODY_BYTES: '1024' },
  });
  const mgmt = await app.mgmtSecret();
  ({ wallet, secret } = await createWallet(app, mgmt, 'payer'));
});
afterAll(async () => {
  await app?.close();
  await upstream?.close();
});
beforeEach(() => {
  upstream.requests.length = 0;
});

const pay = (body: Record<string, unknown>, credential = secret) => call(app, 'POST', '/v1/wallets/me/pay-and-call', credential, { maxPayment: maxPayment('1000'), ...body });
const url = (path: string) => `${upstream.origin}${path}`;

describe('unpaid upstreams', () => {
  it('returns JSON as JSON with payment null', async () => {
    routes.set('/json', (_req, res) => res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'x-extra': 'yes' }).end('{"hello":"world"}'));
    const answer = await pay({ url: url('/json') });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ code: 0, message: 'ok', data: { payment: null, upstream: { status: 200, body: { hello: 'world' }, bodyEncoding: 'json' } } });
    expect(answer.body.data.upstream.headers['x-extra']).toBe('yes');
    expect(answer.body.data.upstream.headers).not.toHaveProperty('connection');
  });

  it('returns text as text, binary as base64 behind the marker, and an empty body as null', async () => {
    routes.set('/text', (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('plain hello'));
    routes.set('/bin', (_req, res) => res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(Buffer.from([0, 255, 1, 2])));
    routes.set('/png', (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from('89504e470d0a1a0a', 'hex')));
    routes.set('/empty', (_req, res) => res.writeHead(204).end());
    routes.set('/bad-json', (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{not json'));
    expect((await pay({ url: url('/text') })).body.data.upstream).toMatchObject({ body: 'plain hello', bodyEncoding: 'text' });
    expect((await pay({ url: url('/bin') })).body.data.upstream).toMatchObject({ body: { encoding: 'base64', data: 'AP8BAg==' }, bodyEncoding: 'base64' });
    expect((await pay({ url: url('/png') })).body.data.upstream.body).toEqual({ encoding: 'base64', data: Buffer.from('89504e470d0a1a0a', 'hex').toString('base64') });
    expect((await pay({ url: url('/empty') })).body.data.upstream).toMatchObject({ status: 204, body: null, bodyEncoding: 'empty' });
    expect((await pay({ url: url('/bad-json') })).body.data.upstream).toMatchObject({ body: '{not json', bodyEncoding: 'text' });
  });

  it('relays upstream errors as upstream data, not as our errors', async () => {
    routes.set('/boom', (_req, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('boom'));
    const answer = await pay({ url: url('/boom') });
    expect(answer.status).toBe(200);
    expect(answer.body.data).toMatchObject({ upstream: { status: 500, body: 'boom' }, payment: null });
  });

  it('forwards method, body and headers minus hop-by-hop ones and our own credentials', async () => {
    routes.set('/echo', (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
    await pay({
      url: url('/echo?q=1'),
      method: 'POST',
      body: { order: 7 },
      headers: {
        'X-Custom': 'kept',
        Authorization: 'Bearer upstream-token',
        'X-Ours': `Bearer ${secret}`,
        Connection: 'keep-alive, X-Listed',
        'X-Listed': 'dropped',
        'Keep-Alive': 'timeout=5',
        'Transfer-Encoding': 'chunked',
        TE: 'trailers',
        Upgrade: 'websocket',
        Host: 'evil.example',
        'Proxy-Authorization': 'Basic eA==',
        'Payment-Signature': 'forged',
        'Accept-Encoding': 'gzip',
      },
    });
    const [seen] = upstream.requests;
    expect(seen.method).toBe('POST');
    expect(seen.url).toBe('/echo?q=1');
    expect(JSON.parse(seen.body)).toEqual({ order: 7 });
    expect(seen.headers['content-type']).toBe('application/json');
    expect(seen.headers['x-custom']).toBe('kept');
    expect(seen.headers.authorization).toBe('Bearer upstream-token');
    expect(seen.headers.host).toBe(upstream.host);
    for (const name of ['x-ours', 'x-listed', 'keep-alive', 'transfer-encoding', 'te', 'upgrade', 'proxy-authorization', 'payment-signature', 'accept-encoding']) {
      expect(seen.headers, name).not.toHaveProperty(name);
    }
  });

  it('drops an Authorization header carrying our wallet credential', async () => {
    routes.set('/echo', (_req, res) => res.writeHead(200).end('ok'));
    await pay({ url: url('/echo'), headers: { authorization: `Bearer ${secret}` } });
    expect(upstream.requests[0].headers).not.toHaveProperty('authorization');
  });

  it('sends a string body as text', async () => {
    routes.set('/echo', (_req, res) => res.writeHead(200).end('ok'));
    await pay({ url: url('/echo'), method: 'PUT', body: 'raw text' });
    expect(upstream.requests[0]).toMatchObject({ method: 'PUT', body: 'raw text' });
    expect(upstream.requests[0].headers['content-type']).toBe('text/plain; charset=utf-8');
  });
});

describe('validation', () => {
  const max = maxPayment('100');
  it.each([
    ['no url', { maxPayment: max }],
    ['no maxPayment', { url: 'https://example.com' }],
    ['a body with GET', { url: 'https://example.com', body: 'x', maxPayment: max }],
    ['an unknown method', { url: 'https://example.com', method: 'HEAD', maxPayment: max }],
    ['51 headers', { url: 'https://example.com', headers: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`x-h${i}`, 'v'])), maxPayment: max }],
    ['a header with CRLF', { url: 'https://example.com', headers: { 'x-a': 'v\r\nx-b: w' }, maxPayment: max }],
    ['a non-CAIP-2 network', { url: 'https://example.com', maxPayment: { ...max, network: 'base' } }],
    ['a non-EVM network', { url: 'https://example.com', maxPayment: { ...max, network: 'solana:mainnet' } }],
    ['an asset that is not an address', { url: 'https://example.com', maxPayment: { ...max, asset: 'USDG' } }],
    ['a decimal amount', { url: 'https://example.com', maxPayment: { ...max, amount: '1.5' } }],
    ['a negative amount', { url: 'https://example.com', maxPayment: { ...max, amount: '-1' } }],
  ])('refuses %s with 400 and sends nothing', async (_label, body) => {
    const answer = await call(app, 'POST', '/v1/wallets/me/pay-and-call', secret, body);
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe(1000);
    expect(upstream.requests).toHaveLength(0);
  });

  it('accepts exactly 50 headers', async () => {
    routes.set('/echo', (_req, res) => res.writeHead(200).end('ok'));
    const headers = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`x-h${i}`, 'v']));
    expect((await pay({ url: url('/echo'), headers })).status).toBe(200);
    expect(upstream.requests[0].headers['x-h49']).toBe('v');
  });

  it('answers 413 for a forwarded body over the limit, before any request', async () => {
    routes.set('/echo', (_req, res) => res.writeHead(200).end('ok'));
    expect((await pay({ url: url('/echo'), method: 'POST', body: 'x'.repeat(1024) })).status).toBe(200);
    upstream.requests.length = 0;
    const answer = await pay({ url: url('/echo'), method: 'POST', body: 'x'.repeat(1025) });
    expect(answer.status).toBe(413);
    expect(answer.body).toMatchObject({ code: 1007, data: { limit: 1024, size: 1025 } });
    expect(upstream.requests).toHaveLength(0);
  });

  it.each([
    ['http to a host that is not allow-listed', 'http://example.com/x', 'url_not_allowed'],
    ['another scheme', 'ftp://example.com/x', 'url_not_allowed'],
    ['a malformed URL', 'not a url', 'invalid_url'],
  ])('refuses %s with 400', async (_label, target) => {
    const answer = await pay({ url: target });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe(1000);
  });
});

describe('upstream failures', () => {
  it('answers 504 when the upstream times out', async () => {
    routes.set('/slow', (_req, res) => void setTimeout(() => res.writeHead(200).end('late'), 6_000));
    const answer = await pay({ url: url('/slow') });
    expect(answer.status).toBe(504);
    expect(answer.body.code).toBe(1013);
  });

  it('answers 502 when the upstream is unreachable', async () => {
    const answer = await pay({ url: `http://127.0.0.1:${closedPort}/x` });
    expect(answer.status).toBe(502);
    expect(answer.body.code).toBe(1011);
  });

  it('answers 502 for a 402 without a usable x402 v2 challenge, with the upstream answer in data', async () => {
    routes.set('/plain-402', (_req, res) => res.writeHead(402, { 'content-type': 'text/plain' }).end('pay me'));
    routes.set('/v1-402', (_req, res) => res.writeHead(402, { 'content-type': 'application/json' }).end(JSON.stringify({ x402Version: 1, accepts: [{ scheme: 'exact', network: 'base', maxAmountRequired: '1' }] })));
    routes.set('/garbled-402', (_req, res) => res.writeHead(402, { 'payment-required': '%%%' }).end());
    routes.set('/empty-accepts', (_req, res) => challenge(res, []));
    for (const path of ['/plain-402', '/v1-402', '/garbled-402', '/empty-accepts']) {
      const answer = await pay({ url: url(path) });
      expect(answer.status, path).toBe(502);
      expect(answer.body.data.upstream.status).toBe(402);
    }
    expect(upstream.requests.every((r) => r.headers['payment-signature'] === undefined)).toBe(true);
  });
});

describe('paying', () => {
  it('refuses requirements above maxPayment with 400, the offers in data, nothing signed or stored', async () => {
    routes.set('/paid', (req, res) => challenge(res, [requirement('100')]));
    const answer = await pay({ url: url('/paid'), maxPayment: maxPayment('99') });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe(1000);
    expect(answer.body.data.accepts).toEqual([requirement('100')]);
    expect(answer.body.data.maxPayment).toEqual(maxPayment('99'));
    expect(upstream.requests).toHaveLength(1);
    expect(upstream.requests[0].headers).not.toHaveProperty('payment-signature');
    expect((await call(app, 'GET', '/v1/wallets/me/payments', secret)).body.data).toEqual([]);
  });

  it.each([
    ['another network', { network: 'eip155:1' }],
    ['another asset', { asset: `0x${'2'.repeat(40)}` }],
    ['another scheme', { scheme: 'upto' }],
    ['Permit2 transfers', { extra: { name: 'Global Dollar', version: '1', assetTransferMethod: 'permit2' } }],
  ])('refuses a requirement on %s', async (_label, change) => {
    routes.set('/other', (_req, res) => challenge(res, [requirement('10', change as object)]));
    const answer = await pay({ url: url('/other'), maxPayment: maxPayment('100') });
    expect(answer.status).toBe(400);
    expect(upstream.requests).toHaveLength(1);
  });

  it('pays a matching requirement: signs EIP-3009 with the wallet key, retries, records the receipt but not settled (the chain never saw it)', async () => {
    let checked: Awaited<ReturnType<typeof checkPayment>> = null;
    routes.set('/paid', async (req, res) => {
      checked = await checkPayment(req);
      if (!checked?.valid) return challenge(res, [requirement('100')]);
      settled(res, { message: 'paid pong' });
    });
    const answer = await pay({ url: url('/paid'), maxPayment: maxPayment('100') });
    expect(answer.status).toBe(200);
    expect(answer.body.data.upstream).toMatchObject({ status: 200, body: { message: 'paid pong' } });
    const payment = answer.body.data.payment;
    // The upstream's receipt names a transaction the chain does not have: recorded as what it said,
    // and the payment stays pending (transaction null) until the chain shows a transfer.
    expect(payment).toMatchObject({ status: 'pending', x402Version: 2, scheme: 'exact', network: NETWORK, asset: USDG, amount: '100', payTo: PAY_TO, transaction: null, error: null, });
    expect(payment.settlement).toMatchObject({ success: true, transaction: `0x${'ab'.repeat(32)}` });
    expect(checked).toMatchObject({ valid: true, from: wallet.address, to: PAY_TO, value: '100' });
    expect(upstream.requests).toHaveLength(2);
    const listed = await call(app, 'GET', '/v1/wallets/me/payments', secret);
    expect(listed.body.data[0]).toEqual(payment);
  });

  it('takes the PAYMENT-REQUIRED challenge from a JSON body too, and pays the cheapest offer when all match', async () => {
    routes.set('/body-challenge', async (req, res) => {
      const checked = await checkPayment(req);
      if (checked?.valid) return settled(res, { paid: checked.value });
      res.writeHead(402, { 'content-type': 'application/json' }).end(
        JSON.stringify({ x402Version: 2, resource: { url: 'x' }, accepts: [requirement('80'), requirement('50'), requirement('70')] }),
      );
    });
    const answer = await pay({ url: url('/body-challenge'), maxPayment: maxPayment('80') });
    expect(answer.status).toBe(200);
    expect(answer.body.data.upstream.body).toEqual({ paid: '50' });
    expect(answer.body.data.payment.amount).toBe('50');
  });

  it('refuses a challenge when one of its requirements exceeds maxPayment (all must match), nothing signed', async () => {
    routes.set('/mixed', (_req, res) => challenge(res, [requirement('10'), requirement('200')]));
    const answer = await pay({ url: url('/mixed'), maxPayment: maxPayment('100') });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 1000, data: { accepts: [requirement('10'), requirement('200')] } });
    expect(upstream.requests).toHaveLength(1);
  });

  it('answers 502 when the upstream refuses the payment; the payment stays open (unknown) for the chain to decide', async () => {
    routes.set('/refuses', (_req, res) => challenge(res, [requirement('10')], 'invalid_exact_evm_insufficient_balance'));
    const answer = await pay({ url: url('/refuses'), maxPayment: maxPayment('10') });
    expect(answer.status).toBe(502);
    expect(answer.body.code).toBe(1011);
    expect(answer.body.data.payment).toMatchObject({ status: 'unknown', error: 'upstream refused the payment: invalid_exact_evm_insufficient_balance', transaction: null });
    expect(answer.body.data.upstream.status).toBe(402);
    expect(upstream.requests).toHaveLength(2);
    // The signature sent cannot be recalled: the answer says until when it stays spendable, at most 120 s of chain time away.
    const signed = decodePaymentSignatureHeader(upstream.requests[1]!.headers['payment-signature'] as string);
    const validBefore = Number((signed.payload as { authorization: { validBefore: string } }).authorization.validBefore);
    expect(answer.body.data.spendableUntil).toBe(new Date(validBefore * 1000).toISOString());
    expect(answer.body.message).toContain(answer.body.data.spendableUntil);
    const chainNow = Number((await app.ctx.chain.publicClient.getBlock({ blockTag: 'latest' })).timestamp);
    expect(validBefore - chainNow).toBeLessThanOrEqual(120);
  });

  it('marks a payment unknown when the upstream answers without a receipt', async () => {
    routes.set('/no-receipt', async (req, res) => ((await checkPayment(req)) ? res.writeHead(200).end('thanks') : challenge(res, [requirement('10')])));
    const answer = await pay({ url: url('/no-receipt'), maxPayment: maxPayment('10') });
    expect(answer.status).toBe(200);
    expect(answer.body.data.payment).toMatchObject({ status: 'unknown', transaction: null });
  });

  it('answers 504 with the payment (unknown) when the paid retry times out', async () => {
    routes.set('/slow-paid', async (req, res) => ((await checkPayment(req)) ? void setTimeout(() => res.writeHead(200).end('late'), 6_000) : challenge(res, [requirement('10')])));
    const answer = await pay({ url: url('/slow-paid'), maxPayment: maxPayment('10') });
    expect(answer.status).toBe(504);
    expect(answer.body.data.payment).toMatchObject({ status: 'unknown', amount: '10' });
  });

  it('never follows a redirect with the payment signature', async () => {
    routes.set('/redirects', async (req, res) => ((await checkPayment(req)) ? res.writeHead(302, { location: url('/elsewhere') }).end() : challenge(res, [requirement('10')])));
    routes.set('/elsewhere', (_req, res) => res.writeHead(200).end('moved'));
    const answer = await pay({ url: url('/redirects'), maxPayment: maxPayment('10') });
    expect(answer.status).toBe(502);
    expect(answer.body.data.payment.status).toBe('unknown');
    expect(upstream.requests.map((r) => r.url)).toEqual(['/redirects', '/redirects']);
  });

  it('sends the paid retry to the URL that issued the challenge after a redirect', async () => {
    routes.set('/moved', (_req, res) => res.writeHead(301, { location: url('/paid-here') }).end());
    routes.set('/paid-here', async (req, res) => ((await checkPayment(req))?.valid ? settled(res, { ok: true }) : challenge(res, [requirement('10')])));
    const answer = await pay({ url: url('/moved'), maxPayment: maxPayment('10') });
    expect(answer.status).toBe(200);
    expect(answer.body.data.payment).toMatchObject({ status: 'pending', amount: '10', settlement: { success: true } });
    expect(upstream.requests.map((r) => [r.url, 'payment-signature' in r.headers])).toEqual([
      ['/moved', false],
      ['/paid-here', false],
      ['/paid-here', true],
    ]);
  });

  it('refuses to sign an authorization that stays valid for more than an hour', async () => {
    routes.set('/long-lived', (_req, res) => challenge(res, [requirement('10', { maxTimeoutSeconds: 86_400 })]));
    const answer = await pay({ url: url('/long-lived'), maxPayment: maxPayment('10') });
    expect(answer.status).toBe(400);
    expect(answer.body.data.accepts[0].maxTimeoutSeconds).toBe(86_400);
    expect(upstream.requests).toHaveLength(1);
  });

  it('lists payments newest first, pages with before, and only for its own wallet', async () => {
    const all = (await call(app, 'GET', '/v1/wallets/me/payments?limit=100', secret)).body.data as Array<{ id: string }>;
    expect(all.length).toBeGreaterThanOrEqual(5);
    expect(all.map((p) => p.id)).toEqual([...all.map((p) => p.id)].sort().reverse());
    const page = await call(app, 'GET', `/v1/wallets/me/payments?limit=2&before=${all[1].id}`, secret);
    expect(page.body.data.map((p: { id: string }) => p.id)).toEqual([all[2].id, all[3].id]);
    expect((await call(app, 'GET', '/v1/wallets/me/payments?before=nope', secret)).status).toBe(400);
    const other = await createWallet(app, await app.mgmtSecret('other'), 'other-payer');
    expect((await call(app, 'GET', '/v1/wallets/me/payments', other.secret)).body.data).toEqual([]);
  });
});

describe('hostile upstreams (their JSON passes the JSON guard before anything reads or stores it)', () => {
  const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
  const receipt = (extra: string) => b64(`{"success":true,"transaction":"0x${'cd'.repeat(32)}","network":"${NETWORK}"${extra}}`);
  const deep = `${'['.repeat(1000)}${']'.repeat(1000)}`;
  const hostileReceipts: [string, string][] = [
    ['nested 1,000 levels', receipt(`,"deep":${deep}`)],
    ['with U+0000', receipt(',"errorReason":"a\\u0000b"')],
    ['with a lone surrogate', receipt(',"payer":"\\ud800"')],
  ];

  it.each(hostileReceipts)('a PAYMENT-RESPONSE %s: 200 in the envelope, payment unknown with no settlement stored, the database keeps working', async (label, header) => {
    const path = `/hostile-receipt-${hostileReceipts.findIndex(([l]) => l === label)}`;
    routes.set(path, async (req, res) => {
      if (!(await checkPayment(req))?.valid) return challenge(res, [requirement('10')]);
      res.writeHead(200, { 'payment-response': header, 'content-type': 'application/json' }).end('{"ok":true}');
    });
    const answer = await pay({ url: url(path), maxPayment: maxPayment('10') });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ code: 0, message: 'ok', data: { upstream: { status: 200, body: { ok: true } } } });
    expect(answer.body.data.payment).toMatchObject({ status: 'unknown', settlement: null, transaction: null });
    expect(answer.body.data.payment.error).toMatch(/^unusable receipt: the PAYMENT-RESPONSE header is refused by the JSON guard/);
    // Follow-up queries: the row reads back, and the service still answers.
    const listed = await call(app, 'GET', '/v1/wallets/me/payments', secret);
    expect(listed.status).toBe(200);
    expect(listed.body.data[0]).toEqual(answer.body.data.payment);
    expect((await app.origins.api!.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });

  it('a 402 whose JSON body is nested 1,000 levels or holds U+0000: 502 invalid_challenge in the envelope, nothing signed', async () => {
    const valid = JSON.stringify({ x402Version: 2, resource: { url: 'x' }, accepts: [requirement('10')] });
    routes.set('/hostile-402-deep', (_req, res) => res.writeHead(402, { 'content-type': 'application/json' }).end(valid.replace('"version":"1"', `"version":"1","deep":${deep}`)));
    routes.set('/hostile-402-nul', (_req, res) => res.writeHead(402, { 'content-type': 'application/json' }).end(valid.replace('"version":"1"', '"version":"1\\u0000"')));
    for (const path of ['/hostile-402-deep', '/hostile-402-nul']) {
      const answer = await pay({ url: url(path), maxPayment: maxPayment('10') });
      expect(answer.status, path).toBe(502);
      expect(answer.body).toMatchObject({ code: 1011, data: { upstream: { status: 402, bodyEncoding: 'text' } } });
      expect(answer.body.message).toMatch(/JSON guard/);
    }
    expect(upstream.requests.every((r) => r.headers['payment-signature'] === undefined)).toBe(true);
  });

  it('an unpaid JSON body nested 1,000 levels comes back as text, not as JSON', async () => {
    routes.set('/deep-body', (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(deep));
    const answer = await pay({ url: url('/deep-body') });
    expect(answer.status).toBe(200);
    expect(answer.body.data.upstream).toMatchObject({ status: 200, bodyEncoding: 'text', body: deep });
  });
});
