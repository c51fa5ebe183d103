// GET /metrics on every origin: Prometheus text, parsed with a real Prometheus text parser, with the
// requests just made counted by route pattern and status, the queue depth, and the worker's loops.
// Each origin serves its own request series; the process-wide ones come from the api origin (the
// primary: metrics-origins.test.ts checks that the scrapes add up).
// @ts-expect-error: the parser ships no types
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { createProjectKey } from '../events/harness.js';
import { wrapFetchWithPayment } from '@x402/fetch';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { testPayer } from '../../templates/paid-server/test/helpers.js';
import { requirementsFor, settle } from '../facilitator/support.js';
import { signAuthorization } from '../x402/support.js';

interface Sample {
  labels: Record<string, string>;
  value?: string;
  count?: string;
  sum?: string;
}
interface Family {
  name: string;
  type: string;
  metrics: Sample[];
}

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => app?.close());

async function scrape(origin: 'api' | 'facilitator' | 'relay' | 'assets'): Promise<Map<string, Family>> {
  const response = await fetch(`${app.urls[origin]}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/plain');
  const families = parsePrometheusTextFormat(await response.text()) as Family[];
  return new Map(families.map((family) => [family.name, family]));
}

const find = (family: Family | undefined, labels: Record<string, string>) =>
  family?.metrics.find((sample) => Object.entries(labels).every(([k, v]) => sample.labels[k] === v));

describe('/metrics', () => {
  it('counts requests by origin, route pattern and status, with latency histograms', async () => {
    for (let i = 0; i < 3; i++) expect((await fetch(`${app.urls.api}/health`)).status).toBe(200);
    expect((await fetch(`${app.urls.facilitator}/health`)).status).toBe(200);
    const key = await createProjectKey(app, 'metrics-user');
    const unknownEvent = '019cbb4b-4c00-7000-8000-000000000000';
    for (const id of [unknownEvent, '019cbb4b-4c00-7000-8000-000000000001']) {
      const response = await fetch(`${app.urls.api}/v1/events/${id}`, { headers: { authorization: `Bearer ${key}` } });
      expect(response.status).toBe(404);
    }

    for (const origin of ['api', 'facilitator', 'relay', 'assets'] as const) {
      const families = await scrape(origin);
      // The latency histogram is there (this parser keeps a labelled histogram's buckets, not its labels).
      expect(families.get('tollgate_http_request_duration_seconds')?.type, origin).toBe('HISTOGRAM');
      const http = families.get('tollgate_http_requests_total');
      expect(http?.type, origin).toBe('COUNTER');
      expect(http!.metrics.every((sample) => sample.labels.origin === origin), origin).toBe(true);
    }
    const api = (await scrape('api')).get('tollgate_http_requests_total');
    expect(find(api, { origin: 'api', method: 'GET', route: '/health', status: '200' })?.value).toBe('3');
    expect(find((await scrape('facilitator')).get('tollgate_http_requests_total'), { origin: 'facilitator', method: 'GET', route: '/health', status: '200' })?.value).toBe('1');
    // Route patterns, never raw URLs: both ids land on one series.
    expect(find(api, { origin: 'api', method: 'GET', route: '/v1/events/:eventId', status: '404' })?.value).toBe('2');
    expect(api!.metrics.some((sample) => sample.labels.route?.includes(unknownEvent))).toBe(false);
  });

  it('shows queue depth, lease expiries and the health of every background loop', async () => {
    const key = await createProjectKey(app, 'metrics-queues');
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const queue = (await (await fetch(`${app.urls.api}/v1/event-queues`, { method: 'POST', headers, body: JSON.stringify({ name: 'm' }) })).json()) as { data: { id: string } };
    const events = Array.from({ length: 5 }, (_, n) => ({ payload: { n } }));
    await fetch(`${app.urls.api}/v1/event-queues/${queue.data.id}/events/batch`, { method: 'POST', headers, body: JSON.stringify({ events }) });
    await fetch(`${app.urls.api}/v1/event-queues/${queue.data.id}/claim`, { method: 'POST', headers, body: JSON.stringify({ maxEvents: 2 }) });

    const families = await scrape('api');
    const depth = families.get('tollgate_queue_events');
    expect(find(depth, { state: 'ready' })?.value).toBe('3');
    expect(find(depth, { state: 'leased' })?.value).toBe('2');
    expect(find(depth, { state: 'dead' })?.value).toBe('0');
    expect(families.get('tollgate_queue_lease_expiries')?.metrics[0].value).toBe('0');
    // The queue's own depth (it is among the 20 deepest: the only one with events).
    const own = families.get('tollgate_queue_depth');
    expect(['ready', 'delayed', 'leased'].map((state) => find(own, { queue: queue.data.id, state })?.value)).toEqual(['3', '0', '2']);

    const failures = families.get('tollgate_loop_consecutive_failures');
    for (const loop of ['events.sweeper', 'events.scheduler']) {
      expect(find(failures, { loop })?.value, loop).toBe('0');
    }
    const lastRun = Number(find(families.get('tollgate_loop_last_run_timestamp_seconds'), { loop: 'events.sweeper' })?.value);
    expect(Math.abs(lastRun - Date.now() / 1000)).toBeLessThan(60);
  });

  it('counts settlements by outcome and reason, facilitator latency, relayer gas and nonce gap, and indexer lag', async () => {
    const payer = testPayer();
    await app.ctx.chain.devchain!.fund(payer.account.address, '1');
    const paid = await wrapFetchWithPayment(fetch, payer.http)(`${app.urls.api}/x402-test/ping`);
    expect(paid.status, await paid.clone().text()).toBe(200);
    // A settle refused: the payer holds no USDG.
    const broke = privateKeyToAccount(generatePrivateKey());
    const requirements = requirementsFor(app);
    expect((await settle(app, await signAuthorization(broke, requirements), requirements)).body).toMatchObject({ success: false });

    const families = await scrape('api');
    const settlements = families.get('tollgate_facilitator_settlements_total');
    expect(find(settlements, { outcome: 'settled', reason: '' })?.value).toBe('1');
    expect(find(settlements, { outcome: 'failed', reason: 'invalid_exact_evm_insufficient_balance' })?.value).toBe('1');
    expect(families.get('tollgate_facilitator_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(families.get('tollgate_facilitator_client_duration_seconds')?.type).toBe('HISTOGRAM');
    const text = await (await fetch(`${app.urls.api}/metrics`)).text();
    // The paid endpoint's verify and settle (in-process here) and the engine's two settles and one verify.
    expect(text).toContain('tollgate_facilitator_client_duration_seconds_count{facilitator="local",operation="settle",outcome="ok"} 1');
    expect(text).toContain('tollgate_facilitator_duration_seconds_count{operation="settle",outcome="rejected"} 1');

    const relayer = app.ctx.chain.relayers[0]!.address;
    expect(Number(find(families.get('tollgate_relayer_balance_wei'), { address: relayer })?.value)).toBeGreaterThan(0);
    expect(find(families.get('tollgate_relayer_nonce_gap'), { address: relayer })?.value).toBe('0');
    // The indexer catches up with the settlement's block within a few ticks.
    await expect
      .poll(async () => Number(find((await scrape('api')).get('tollgate_indexer_lag_blocks'), { chain_id: String(app.ctx.chain.chainId) })?.value), { timeout: 15_000 })
      .toBe(0);
  });
});
