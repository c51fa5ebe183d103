// Scraping every origin of a process adds up: each origin's /metrics serves the request series of that
// origin only, and the process-wide series (process, database, queues, loops, outcomes) come from the
// process's primary origin alone, the first of api, facilitator, relay, assets that it runs.
// @ts-expect-error: the parser ships no types
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORIGINS, type OriginName } from '../../src/platform/server-settings.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

interface Family {
  name: string;
  metrics: Array<{ labels?: Record<string, string>; value?: string }>;
}

interface Scrape {
  origin: OriginName;
  /** Every family the text declares (`# TYPE` lines), samples or not. */
  declared: string[];
  families: Family[];
}

const PROCESS_SERIES = [
  'process_cpu_user_seconds_total',
  'process_resident_memory_bytes',
  'nodejs_eventloop_lag_seconds',
  'nodejs_heap_size_used_bytes',
  'nodejs_gc_duration_seconds',
  'tollgate_db_query_duration_seconds',
  'tollgate_db_pool_connections',
  'tollgate_db_pool_idle_connections',
  'tollgate_db_pool_waiting_queries',
  'tollgate_queue_events',
  'tollgate_queue_depth',
  'tollgate_loop_active',
  'tollgate_facilitator_settlements_total',
  'tollgate_intent_outcomes_total',
  'tollgate_pay_and_call_total',
];
const HTTP_SERIES = ['tollgate_http_requests_total', 'tollgate_http_request_duration_seconds'];

async function scrape(app: TestApp, origin: OriginName): Promise<Scrape> {
  const response = await fetch(`${app.urls[origin]}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/plain');
  const text = await response.text();
  const declared = [...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]!);
  // A family declared twice in one text is itself double counting.
  expect(new Set(declared).size, origin).toBe(declared.length);
  return { origin, declared, families: parsePrometheusTextFormat(text) as Family[] };
}

const get = (url: string) => fetch(url).then((response) => response.status);

let app: TestApp;
let relayNode: TestApp;
beforeAll(async () => {
  [app, relayNode] = await Promise.all([buildTestApp(), buildTestApp({ roles: ['relay', 'assets', 'worker'] })]);
}, 120_000);
afterAll(async () => {
  await Promise.all([app?.close(), relayNode?.close()]);
});

describe('/metrics across the origins of one process', () => {
  it('sums to the true request counts, each origin counting its own, and serves every process series exactly once', async () => {
    const sent: Record<OriginName, number> = { api: 3, facilitator: 2, relay: 4, assets: 1 };
    for (const origin of ORIGINS) for (let i = 0; i < sent[origin]; i++) expect(await get(`${app.urls[origin]}/health`)).toBe(200);
    for (let i = 0; i < 2; i++) expect(await get(`${app.urls.relay}/no-such-route`)).toBe(404);

    const scrapes: Scrape[] = [];
    for (const origin of ORIGINS) scrapes.push(await scrape(app, origin));

    // Each origin's request series name that origin only.
    for (const { origin, families } of scrapes) {
      const requests = families.find((family) => family.name === 'tollgate_http_requests_total');
      expect(requests?.metrics.length, origin).toBeGreaterThan(0);
      expect(requests!.metrics.filter((sample) => sample.labels?.origin !== origin), origin).toEqual([]);
    }
    // Summed over every scrape, as a dashboard over all targets would: the requests sent, once each.
    const health: Record<string, number> = {};
    let unmatched = 0;
    for (const { families } of scrapes) {
      for (const sample of families.find((family) => family.name === 'tollgate_http_requests_total')!.metrics) {
        if (sample.labels?.route === '/health' && sample.labels.status === '200') health[sample.labels.origin!] = (health[sample.labels.origin!] ?? 0) + Number(sample.value);
        if (sample.labels?.route === 'unmatched') unmatched += Number(sample.value);
      }
    }
    expect(health).toEqual(sent);
    expect(unmatched).toBe(2);

    // Process-wide series: in the primary origin's (api's) text, in no other.
    for (const name of PROCESS_SERIES) {
      expect(scrapes.filter((scrape) => scrape.declared.includes(name)).map((scrape) => scrape.origin), name).toEqual(['api']);
    }
    // And nothing else is served twice: every family but the request series appears in one scrape only.
    const seen = new Map<string, OriginName[]>();
    for (const { origin, declared } of scrapes) for (const name of declared) seen.set(name, [...(seen.get(name) ?? []), origin]);
    for (const [name, origins] of seen) expect(origins, name).toEqual(HTTP_SERIES.includes(name) ? ORIGINS : ['api']);
  });

  it('serves the process series from the first origin a process runs when it runs no api', async () => {
    expect(relayNode.origins.api).toBeUndefined();
    expect(await get(`${relayNode.urls.assets}/health`)).toBe(200);
    const relay = await scrape(relayNode, 'relay');
    const assets = await scrape(relayNode, 'assets');
    for (const name of PROCESS_SERIES) {
      expect(relay.declared, name).toContain(name);
      expect(assets.declared, name).not.toContain(name);
    }
    expect(assets.declared.sort()).toEqual([...HTTP_SERIES].sort());
    const requests = assets.families.find((family) => family.name === 'tollgate_http_requests_total');
    expect(requests?.metrics.find((sample) => sample.labels?.route === '/health')?.value).toBe('1');
  });
});
