// One request id across origins: a paid call to the api origin whose facilitator is reached over HTTP
// (FACILITATOR_URL) passes its X-Request-Id on, so the facilitator origin's request log and the
// facilitator's own lines about that settle carry the same id as the api's.
import net from 'node:net';
import { Writable } from 'node:stream';
import { wrapFetchWithPayment } from '@x402/fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/platform/request-context.js';
import { testPayer } from '../../templates/paid-server/test/helpers.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

interface LogLine {
  reqId?: string;
  origin?: string;
  component?: string;
  msg: string;
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });

let app: TestApp;
const raw: string[] = [];
beforeAll(async () => {
  const port = await freePort();
  const sink = new Writable({
    write(chunk, _encoding, done) {
      raw.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  app = await buildTestApp({
    env: { FACILITATOR_PORT: String(port), FACILITATOR_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'debug' },
    log: createLogger('debug', sink),
  });
});
afterAll(async () => app?.close());

describe('request ids across origins', () => {
  it('follow a paid call from the api origin to the facilitator origin and into its logs', async () => {
    const payer = testPayer();
    await app.ctx.chain.devchain!.fund(payer.account.address, '1');
    const requestId = `trace-${Date.now()}`;
    const paid = await wrapFetchWithPayment(fetch, payer.http)(`${app.urls.api}/x402-test/ping`, { headers: { 'x-request-id': requestId } });
    expect(paid.status, await paid.clone().text()).toBe(200);
    expect(paid.headers.get('x-request-id')).toBe(requestId);

    const lines = raw.map((line) => JSON.parse(line) as LogLine);
    const tagged = lines.filter((line) => line.reqId === requestId);
    // Fastify's request logs on both origins: the facilitator adopted the id the api passed on.
    expect(tagged.some((line) => line.origin === 'api' && line.msg === 'incoming request')).toBe(true);
    expect(tagged.filter((line) => line.origin === 'facilitator' && line.msg === 'incoming request').length).toBeGreaterThanOrEqual(2); // verify, settle
    // The facilitator engine's own lines (a component logger, not a request logger) carry it too.
    expect(tagged.some((line) => line.component === 'facilitator' && line.msg === 'settle answered')).toBe(true);
    // Once a line: a request logger's binding is not repeated by the root logger's mixin.
    expect(raw.filter((line) => line.split('"reqId"').length > 2)).toEqual([]);
  });
});
