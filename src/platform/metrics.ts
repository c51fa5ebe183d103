import { Counter, Gauge, Histogram, Registry } from 'prom-client';

// Prometheus metrics of one process: one registry per AppContext (tests build several apps in one
// process, so nothing goes to prom-client's global registry). Every origin serves it at /metrics.
// Labels are bounded: routes are route patterns (`/v1/events/:eventId/ack`), never raw URLs.

type HttpLabel = 'origin' | 'method' | 'route' | 'status';

export interface Metrics {
  registry: Registry;
  /** Request latency by origin, method, route pattern and status, in seconds. */
  httpDuration: Histogram<HttpLabel>;
  /** Requests by origin, method, route pattern and status. */
  httpRequests: Counter<HttpLabel>;
  /** Adds a gauge whose value is read at scrape time (from memory or one cheap query). */
  gauge(name: string, help: string, labelNames: readonly string[], collect: (set: (labels: Record<string, string>, value: number) => void) => Promise<void> | void): void;
  counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L>;
  /** A latency histogram in seconds (buckets from 1 ms to 30 s unless given). */
  histogram<L extends string>(name: string, help: string, labelNames: readonly L[], buckets?: number[]): Histogram<L>;
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Scrape-time collectors get this long; one that does not answer leaves its gauge empty, never hangs the scrape. */
const COLLECT_TIMEOUT_MS = 2_000;

export function createMetrics(): Metrics {
  const registry = new Registry();
  const httpRequests = new Counter({
    name: 'tollgate_http_requests_total',
    help: 'HTTP requests by origin, method, route pattern and status',
    labelNames: ['origin', 'method', 'route', 'status'] as const,
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: 'tollgate_http_request_duration_seconds',
    help: 'HTTP request latency by origin, method, route pattern and status',
    labelNames: ['origin', 'method', 'route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  return {
    registry,
    httpRequests,
    httpDuration,
    gauge(name, help, labelNames, collect) {
      new Gauge({
        name,
        help,
        labelNames,
        registers: [registry],
        async collect() {
          this.reset();
          let timer: NodeJS.Timeout | undefined;
          const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, COLLECT_TIMEOUT_MS)));
          const values: Array<[Record<string, string>, number]> = [];
          await Promise.race([Promise.resolve(collect((labels, value) => values.push([labels, value]))).catch(() => {}), timeout]);
          clearTimeout(timer);
          for (const [labels, value] of values) this.set(labels, value);
        },
      });
    },
    counter(name, help, labelNames) {
      return new Counter({ name, help, labelNames, registers: [registry] });
    },
    histogram(name, help, labelNames, buckets = LATENCY_BUCKETS) {
      return new Histogram({ name, help, labelNames, buckets, registers: [registry] });
    },
  };
}
