// The request series are counted on plain numbers and written out by hand: the text must be what
// prom-client's own Counter and Histogram write for the same requests (names, labels, cumulative
// buckets, +Inf, sum, count, escaping), so dashboards and the parsers in test/http see no change.
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HttpRequestMetrics } from './http-metrics.js';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The same requests through prom-client, the way the service counted them before. */
function promClientText(requests: Array<[string, string, number, number]>): Promise<string> {
  const registry = new Registry();
  const labelNames = ['origin', 'method', 'route', 'status'] as const;
  const counter = new Counter({ name: 'tollgate_http_requests_total', help: 'HTTP requests by origin, method, route pattern and status', labelNames, registers: [registry] });
  const histogram = new Histogram({
    name: 'tollgate_http_request_duration_seconds',
    help: 'HTTP request latency by origin, method, route pattern and status',
    labelNames,
    buckets: BUCKETS,
    registers: [registry],
  });
  for (const [route, method, status, ms] of requests) {
    const labels = { origin: 'api', method, route, status: String(status) };
    counter.inc(labels);
    histogram.observe(labels, ms / 1000);
  }
  return registry.metrics();
}

describe('HttpRequestMetrics', () => {
  it('writes the text prom-client writes for the same requests', async () => {
    // Grouped by route, then method, then status: the order both write their series in.
    const requests: Array<[string, string, number, number]> = [
      ['/health', 'GET', 200, 0.4],
      ['/health', 'GET', 200, 5], // exactly on the 5 ms bound: counted in it
      ['/health', 'GET', 200, 31_000], // above the last bound: +Inf only
      ['/health', 'GET', 503, 2.6],
      ['/health', 'HEAD', 200, 0.2],
      ['/v1/events/:eventId', 'GET', 404, 12.25],
      ['/v1/events/:eventId', 'GET', 404, 999],
      ['unmatched', 'POST', 404, 0.05],
      ['/odd/"quoted"\\path', 'GET', 200, 1],
    ];
    const http = new HttpRequestMetrics('api', BUCKETS);
    for (const [route, method, status, ms] of requests) http.forRoute(route)(method, status, ms);
    expect(http.text()).toBe(await promClientText(requests));
  });

  it('declares both families before any request, as prom-client does', async () => {
    expect(new HttpRequestMetrics('api', BUCKETS).text()).toBe(await promClientText([]));
  });
});
