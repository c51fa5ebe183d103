// Two tenants with one of everything, made through the public API: the fuzz and the auth matrix
// speak as tenant A and probe with tenant B's ids.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { familyOf } from '../../src/platform/http/families.js';
import type { OriginName } from '../../src/platform/server-settings.js';
import type { TestApp } from '../helpers/test-app.js';
import { createIntent, createShop, type Shop } from '../intents/fixtures.js';
import { call, createWallet, waitFor } from '../wallets/helpers.js';

export interface Tenant extends Shop {
  mgmt: string;
  walletId: string;
  walletSecret: string;
  credentialId: string;
  intentId: string;
  queueId: string;
  scheduleId: string;
  eventId: string;
  leaseToken: string;
}

export async function createTenant(app: TestApp, name: string): Promise<Tenant> {
  const shop = await createShop(app, `fuzz-${name}-${Math.random().toString(36).slice(2)}`);
  const mgmt = await app.mgmtSecret(`fuzz-${name}`);
  const { wallet, secret, credential } = await createWallet(app, mgmt, `fuzz-${name}`);
  await waitFor(async () => (await call(app, 'GET', `/v1/wallets/${wallet.id}`, mgmt)).body.data.status === 'active');
  const intent = await createIntent(app, shop);
  expect(intent.statusCode).toBe(201);
  const queue = await call(app, 'POST', '/v1/event-queues', shop.apiKey, { name: `queue-${name}` });
  expect(queue.status).toBe(201);
  const queueId = queue.body.data.id as string;
  const schedule = await call(app, 'POST', '/v1/schedules', shop.apiKey, {
    queueId,
    externalId: `schedule-${name}`,
    name: 'yearly',
    schedule: { type: 'cron', expression: '0 0 1 1 *' },
  });
  expect(schedule.status, JSON.stringify(schedule.body)).toBeLessThan(300);
  const event = await call(app, 'POST', `/v1/event-queues/${queueId}/events`, shop.apiKey, { payload: { n: 1 } });
  expect(event.status).toBe(201);
  const claimed = await call(app, 'POST', `/v1/event-queues/${queueId}/claim`, shop.apiKey, { leaseSeconds: 3600 });
  expect(claimed.status).toBe(200);
  return {
    ...shop,
    mgmt,
    walletId: wallet.id,
    walletSecret: secret,
    credentialId: credential.id,
    intentId: intent.json().id,
    queueId,
    scheduleId: schedule.body.data.id,
    eventId: claimed.body.data.event.id,
    leaseToken: claimed.body.data.leaseToken,
  };
}

/** The credential kind each path accepts (undefined: public). */
export function credentialFor(tenant: Tenant, method: string, path: string): string | undefined {
  if (path.startsWith('/v1/projects') || path.startsWith('/v1/oauth') || path.startsWith('/agents') || path.startsWith('/credits') || path.startsWith('/agentic-trading')) return tenant.identity;
  if (path.startsWith('/v1/wallets/me')) return tenant.walletSecret;
  if (path.startsWith('/v1/wallets')) return tenant.mgmt;
  // Public by design: the pay contract and the payer's checkout view (the intent id is the payer's link).
  if (path.startsWith('/v1/payment-intents')) return path.endsWith('/pay') || path.endsWith('/checkout') ? undefined : tenant.apiKey;
  if (path.startsWith('/v1/event-queues') || path.startsWith('/v1/events') || path.startsWith('/v1/schedules')) return tenant.apiKey;
  return undefined;
}

/** The tenant's id for a path parameter name. */
export function idFor(tenant: Tenant, name: string): string | undefined {
  const ids: Record<string, string> = {
    projectId: tenant.projectId,
    merchantId: tenant.merchantId,
    intentId: tenant.intentId,
    queueId: tenant.queueId,
    eventId: tenant.eventId,
    scheduleId: tenant.scheduleId,
    walletId: tenant.walletId,
    credentialId: tenant.credentialId,
  };
  return ids[name];
}

/** What a tenant's resources look like through the API: compared before and after a hostile run. */
export async function snapshot(app: TestApp, t: Tenant) {
  const pick = (body: { data?: Record<string, unknown> } | Record<string, unknown>, keys: string[]) => {
    const data = ('data' in body && body.data ? body.data : body) as Record<string, unknown>;
    return Object.fromEntries(keys.map((k) => [k, data[k]]));
  };
  const intent = await app.origins.api!.inject({ method: 'GET', url: `/v1/payment-intents/${t.intentId}`, headers: { authorization: `Bearer ${t.apiKey}` } });
  return {
    intent: pick(intent.json(), ['id', 'status', 'amountUsdCents', 'merchantId', 'externalId', 'metadata']),
    wallet: pick((await call(app, 'GET', `/v1/wallets/${t.walletId}`, t.mgmt)).body, ['id', 'status', 'address', 'externalId', 'name']),
    // Valid requests may add credentials and projects; the fixtures' own must stay as they were.
    credential: (await call(app, 'GET', `/v1/wallets/${t.walletId}/credentials`, t.mgmt)).body.data.find((c: { id: string }) => c.id === t.credentialId)?.status,
    queue: pick((await call(app, 'GET', `/v1/event-queues/${t.queueId}`, t.apiKey)).body, ['id', 'name', 'status']),
    schedule: pick((await call(app, 'GET', `/v1/schedules/${t.scheduleId}`, t.apiKey)).body, ['id', 'name', 'externalId', 'status']),
    project: (await call(app, 'GET', '/v1/projects', t.identity)).body.data.some((p: { id: string }) => p.id === t.projectId),
  };
}

/** The error body of the family that owns the path, as docs/api.md's Response families promise. */
export function expectFamilyShape(origin: OriginName, url: string, status: number, body: unknown, label: string): void {
  if (status === 402 && (body as { x402Version?: unknown })?.x402Version === 2) return; // the x402 challenge object
  const b = body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  switch (familyOf(origin, url)) {
    case 'envelope':
      expect(typeof b?.code === 'number' && b.code !== 0 && typeof b.message === 'string' && 'data' in b, `${label}: ${JSON.stringify(body)?.slice(0, 200)}`).toBe(true);
      return;
    case 'intent':
      expect(typeof b?.code === 'string' && typeof b.message === 'string', `${label}: ${JSON.stringify(body)?.slice(0, 200)}`).toBe(true);
      return;
    case 'direct':
    case 'relay':
      // The facilitator's x402 answers to a malformed request are x402 objects, also refusals.
      if (b && (b.isValid === false || b.success === false) && typeof (b.invalidReason ?? b.errorReason) === 'string') return;
      expect(typeof b?.error?.code === 'string' && typeof b.error.message === 'string', `${label}: ${JSON.stringify(body)?.slice(0, 200)}`).toBe(true);
  }
}

/** Counts a suite prints in CI: written where .ci/run collects them (TOLLGATE_SUITE_REPORTS), if set. */
export function reportCounts(suite: string, counts: Record<string, number>): void {
  const dir = process.env.TOLLGATE_SUITE_REPORTS;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  const database = process.env.DATABASE_URL ? 'postgres' : 'pglite';
  writeFileSync(join(dir, `${suite}-${database}.json`), JSON.stringify({ suite, database, ...counts }));
}
