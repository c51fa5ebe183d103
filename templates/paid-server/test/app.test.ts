import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import { afterEach, describe, expect, it } from 'vitest';
import { startPaidServer, type RunningPaidServer } from '../src/start.js';
import { PAY_TO, payAndGet, stubFacilitator, testConfig, testPayer } from './helpers.js';

let running: RunningPaidServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function start(env: Record<string, string> = {}) {
  const stub = stubFacilitator();
  running = await startPaidServer(testConfig(env), { facilitator: stub.facilitator, host: '127.0.0.1' });
  return { url: running.url, calls: stub.calls };
}

describe('paid server', () => {
  it('serves /health free', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('answers an unpaid /weather with 402 and the default terms', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/weather`);
    expect(res.status).toBe(402);
    const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    expect(required).toMatchObject({
      x402Version: 2,
      resource: {
        url: 'https://weather.example/weather',
        description: 'Current weather report',
        mimeType: 'application/json',
        serviceName: 'Weather (Tollgate template)',
      },
      accepts: [
        {
          scheme: 'exact',
          network: 'eip155:4663',
          asset: '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168',
          amount: '100',
          payTo: PAY_TO, // checksummed although configured in lower case
          maxTimeoutSeconds: 300,
          extra: { name: 'Global Dollar', version: '1' },
        },
      ],
    });
  });

  it('serves the weather report with PAYMENT-RESPONSE once paid', async () => {
    const { url, calls } = await start();
    const { paid, payload } = await payAndGet(`${url}/weather?city=Lisbon`);
    expect(paid.status).toBe(200);
    const report = await paid.json();
    expect(report).toMatchObject({ city: 'Lisbon', conditions: expect.any(String), temperatureC: expect.any(Number) });
    const settlement = decodePaymentResponseHeader(paid.headers.get('payment-response')!);
    expect(settlement).toMatchObject({ success: true, network: 'eip155:4663' });
    expect(calls.map((c) => c.op)).toEqual(['verify', 'settle']);
    expect(calls[1].requirements).toMatchObject({ amount: '100', payTo: PAY_TO });
    expect(payload.accepted.payTo).toBe(PAY_TO);
  });

  it('accepts the legacy X-PAYMENT header and mirrors X-PAYMENT-RESPONSE', async () => {
    const { url } = await start();
    const payer = testPayer();
    const first = await fetch(`${url}/weather`);
    const payload = await payer.http.createPaymentPayload(payer.http.getPaymentRequiredResponse((n) => first.headers.get(n), await first.json()));
    const paid = await fetch(`${url}/weather`, { headers: { 'X-PAYMENT': payer.http.encodePaymentSignatureHeader(payload)['PAYMENT-SIGNATURE'] } });
    expect(paid.status).toBe(200);
    expect(paid.headers.get('x-payment-response')).toBe(paid.headers.get('payment-response'));
    expect(decodePaymentResponseHeader(paid.headers.get('x-payment-response')!)).toMatchObject({ success: true });
  });

  it('keeps case and slash variants paid and refuses HEAD on the paid path', async () => {
    const { url } = await start();
    for (const path of ['/WEATHER', '/weather/', '/Weather?city=x']) {
      expect((await fetch(url + path)).status, path).toBe(402);
    }
    const head = await fetch(`${url}/weather`, { method: 'HEAD' });
    expect(head.status).toBe(405);
    expect(head.headers.get('allow')).toBe('GET');
    expect((await fetch(`${url}/health`, { method: 'HEAD' })).status).toBe(200);
    expect((await fetch(`${url}/nope`)).status).toBe(404);
  });

  it('answers 503 on paid routes while the facilitator is down, and recovers', async () => {
    const stub = stubFacilitator();
    const getSupported = stub.facilitator.getSupported;
    let up = false;
    stub.facilitator.getSupported = async () => {
      if (!up) throw new Error('connect ECONNREFUSED');
      return getSupported();
    };
    running = await startPaidServer(testConfig(), { facilitator: stub.facilitator, host: '127.0.0.1' });
    const down = await fetch(`${running.url}/weather`);
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('5');
    expect((await fetch(`${running.url}/health`)).status).toBe(200);
    up = true;
    expect((await fetch(`${running.url}/weather`)).status).toBe(402);
  });

  it('lets browsers read the x402 headers (CORS)', async () => {
    const { url } = await start({ CORS_ORIGIN: 'https://shop.example' });
    const preflight = await fetch(`${url}/weather`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://shop.example', 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'payment-signature' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://shop.example');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/PAYMENT-SIGNATURE/);
    const res = await fetch(`${url}/weather`, { headers: { Origin: 'https://shop.example' } });
    expect(res.headers.get('access-control-expose-headers')).toMatch(/PAYMENT-REQUIRED/);
  });

  it('defaults CORS to any origin', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/health`, { headers: { Origin: 'https://any.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
  });
});
