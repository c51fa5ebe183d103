// Fastify's logger is lazy: a request's child logger exists only once it writes, and what it writes is what
// the real pino child would (the origin's and the request's bindings, the root's serializers).
import { Writable } from 'node:stream';
import Fastify, { LogController } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lazyLogger } from './lazy-logger.js';

const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    lines.push(...chunk.toString().split('\n').filter(Boolean).map((line: string) => JSON.parse(line)));
    done();
  },
});
// The root's own error serializer, as src/platform/request-context.ts gives it (there: redaction).
const root = pino({ level: 'info', serializers: { err: (error: Error) => ({ redacted: error.message.length }) } }, sink);
let made = 0;
const origin = root.child({ origin: 'api' });
const counted = new Proxy(origin, {
  get: (target, name, receiver) =>
    name === 'child'
      ? (...args: Parameters<typeof origin.child>) => {
          made += 1;
          return target.child(...args);
        }
      : Reflect.get(target, name, receiver),
});
// As src/app.ts below debug: no request lines of Fastify's own, so a request that logs nothing makes no logger.
const app = Fastify({ loggerInstance: lazyLogger(counted), logController: new LogController({ disableRequestLogging: true }), genReqId: () => 'req-1' });
app.get('/quiet', async () => ({ ok: true }));
app.get('/debug', async (request) => {
  request.log.debug('not at info');
  return { ok: true };
});
app.get('/loud', async (request) => {
  request.log.error({ err: new Error('secret') }, 'failed');
  return { ok: true };
});

beforeAll(() => app.ready());
afterAll(() => app.close());

describe('lazy request loggers', () => {
  it('make no pino child for a request that writes nothing, nor for a line below the level', async () => {
    for (const url of ['/quiet', '/quiet', '/debug']) expect((await app.inject({ method: 'GET', url })).statusCode).toBe(200);
    expect(made).toBe(0);
    expect(lines.filter((line) => line.msg === 'not at info')).toEqual([]);
  });

  it("write with the origin's and the request's bindings and the root's serializers once a request logs", async () => {
    expect((await app.inject({ method: 'GET', url: '/loud' })).statusCode).toBe(200);
    const line = lines.find((entry) => entry.msg === 'failed');
    expect(line).toMatchObject({ origin: 'api', reqId: 'req-1', level: 50, err: { redacted: 6 } });
    expect(made).toBeGreaterThan(0);
  });
});
