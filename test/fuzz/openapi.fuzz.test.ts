// The fuzz suite: ≥ 10,000 hostile requests generated from each origin's /openapi.json, sent to a
// running instance. Passing means: no 5xx (but the spec's 502/503/504 on routes whose upstream or
// chain is the cause), every refusal in its family's shape with x-request-id, no other tenant's data
// served, and afterwards the instance healthy and every fixture unchanged.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { OriginName } from '../../src/platform/server-settings.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { createIntent } from '../intents/fixtures.js';
import { casesOf, combine, operationsOf, type FuzzRequest, type Hints, type Operation } from './openapi-cases.js';
import { createTenant, credentialFor, expectFamilyShape, idFor, reportCounts, snapshot, type Tenant } from './tenants.js';
import { seededRandom } from '../../src/platform/seeded-random.js';

const TARGET = 10_000;
const USDG = '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168';
// Routes whose upstream (the payee's server, the facilitator, the chain) may legitimately fail.
const UPSTREAM_ROUTES = /\/pay-and-call$|\/pay$|\/reconcile$|^\/x402-test\/|^\/(verify|settle)$/;

let app: TestApp;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  app = await buildTestApp();
  [a, b] = [await createTenant(app, 'a'), await createTenant(app, 'b')];
}, 180_000);
afterAll(async () => app?.close());

function hintsFor(tenant: Tenant, other: Tenant): Hints {
  const values: Record<string, unknown> = {
    x402Version: 2,
    name: 'fuzz',
    payTo: tenant.payTo,
    amountUsdCents: 100,
    externalId: 'fuzz-order',
    expression: '0 0 1 1 *',
    leaseToken: tenant.leaseToken,
    url: 'https://127.0.0.1:1/resource', // refused by the SSRF guard: nothing leaves the machine
    maxPayment: { network: 'eip155:4663', asset: USDG, amount: '1' },
    leaseSeconds: 30,
    waitSeconds: 0,
  };
  return {
    value: (name) => idFor(tenant, name) ?? values[name],
    foreign: (name) => idFor(other, name),
    credential: (op) => credentialFor(tenant, op.method, op.path),
  };
}

async function send(request: FuzzRequest) {
  const origin = app.origins[request.op.origin as OriginName]!;
  const response = await origin.inject({ method: request.method as 'GET', url: request.url, headers: request.headers, payload: request.payload });
  let body: unknown;
  try {
    body = response.json();
  } catch {
    body = response.body;
  }
  return { status: response.statusCode, headers: response.headers, body };
}

it(`sends at least ${TARGET} hostile requests generated from /openapi.json: no 5xx, every refusal in shape, nothing leaked or broken`, async () => {
  const before = { a: await snapshot(app, a), b: await snapshot(app, b) };
  const ops: Operation[] = [];
  for (const origin of ['api', 'facilitator', 'relay', 'assets'] as const) {
    const doc = (await app.origins[origin]!.inject({ method: 'GET', url: '/openapi.json' })).json();
    ops.push(...operationsOf(origin, doc));
  }
  const hints = hintsFor(a, b);
  const generated = ops.flatMap((op) => casesOf(op, hints));
  // Top up with pairs of spoiled requests of one operation (deterministic).
  // The same seed sends the same requests.
  const random = seededRandom(4663);
  const requests = [...generated];
  while (requests.length < TARGET) {
    const x = generated[Math.floor(random() * generated.length)]!;
    const siblings = generated.filter((g) => g.op === x.op);
    requests.push(combine(x, siblings[Math.floor(random() * siblings.length)]!));
  }

  const foreignIds = [b.projectId, b.merchantId, b.intentId, b.queueId, b.eventId, b.scheduleId, b.walletId, b.credentialId];
  const statuses = new Map<number, number>();
  const failures: string[] = [];
  for (const request of requests) {
    const { status, headers, body } = await send(request);
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    // The router resolves dot segments: the path as served.
    const path = new URL(request.url, 'http://fuzz').pathname;
    const upstream = UPSTREAM_ROUTES.test(path) && [502, 503, 504].includes(status);
    if (status >= 500 && !upstream) failures.push(`${status} ${request.label}: ${JSON.stringify(body).slice(0, 300)}`);
    if (!headers['x-request-id']) failures.push(`no x-request-id: ${request.label}`);
    if (status < 300 && foreignIds.some((id) => path.includes(id)) && request.headers.authorization) {
      failures.push(`${status} another tenant's resource served: ${request.label}`);
    }
    if (status >= 400) {
      try {
        expectFamilyShape(request.op.origin as OriginName, path, status, body, request.label);
      } catch (error) {
        failures.push((error as Error).message.split('\n')[0]!);
      }
    }
    if (failures.length >= 20) break;
  }
  expect(failures, failures.join('\n')).toEqual([]);
  expect(requests.length).toBeGreaterThanOrEqual(TARGET);

  // Healthy afterwards: liveness, a read and a write on the database, and every fixture unchanged.
  expect((await app.origins.api!.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  expect((await createIntent(app, a)).statusCode).toBe(201);
  expect({ a: await snapshot(app, a), b: await snapshot(app, b) }).toEqual(before);
  reportCounts('fuzz', { requests: requests.length, operations: ops.length, generated: generated.length, ...Object.fromEntries([...statuses].map(([s, n]) => [`status${s}`, n])) });
}, 600_000);
