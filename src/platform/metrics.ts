import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { ORIGINS, type ListenerName, type Role } from './server-settings.js';
import type { Database } from './db.js';
import type { QueryOperation } from './db-timing.js';
import { HttpRequestMetrics } from './http-metrics.js';

// Prometheus metrics of one process: registries per AppContext (tests build several apps in one process,
// so nothing goes to prom-client's global registry); the request series are plain counters per origin
// (src/platform/http-metrics.ts), written out as text at scrape time. Labels are bounded: routes are route patterns
// (`/v1/events/:eventId/ack`), never raw URLs.
//
// Scraping every origin of every node sums correctly (docs/operations.md#metrics): each origin's /metrics
// serves the request series of that origin only, and the process-wide series (process, database, outcomes,
// loops, queues, chain) are served by the process's primary origin only, the first of ORIGINS it runs.

export interface Metrics {
  /** The process-wide series: served by the primary origin only. */
  registry: Registry;
  /** The request series of `origin` (created at first use): served by that origin's /metrics alone. */
  http(origin: ListenerName): HttpRequestMetrics;
  /**
   * What `origin`'s /metrics serves: its request series, and the process-wide ones when it is the
   * primary origin. Serving from the primary starts the default process metrics (once per process).
   */
  scraper(origin: ListenerName, primary: boolean): () => Promise<string>;
  /** Adds a gauge whose value is read at scrape time (from memory or one cheap query). */
  gauge(name: string, help: string, labelNames: readonly string[], collect: (set: (labels: Record<string, string>, value: number) => void) => Promise<void> | void): void;
  /** A counter; asked again by name, the same one (a part built twice on one context counts once). */
  counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L>;
  /** A latency histogram in seconds (buckets from 1 ms to 30 s unless given); the same one again by name. */
  histogram<L extends string>(name: string, help: string, labelNames: readonly L[], buckets?: number[]): Histogram<L>;
}

export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Statements take from a fraction of a millisecond (PGlite, a local server) to seconds. */
const QUERY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const QUERY_OPERATIONS: readonly QueryOperation[] = ['select', 'insert', 'update', 'delete', 'transaction', 'other'];

/** Scrape-time collectors get this long; one that does not answer leaves its gauge empty, never hangs the scrape. */
const COLLECT_TIMEOUT_MS = 2_000;

/** The listener that serves the process-wide series: the first of ORIGINS the process runs, else (a worker-only node) the worker's. */
export function primaryOrigin(roles: readonly Role[]): ListenerName | null {
  return ORIGINS.find((origin) => roles.includes(origin)) ?? (roles.includes('worker') ? 'worker' : null);
}

/**
 * prom-client's default metrics (CPU, memory, heap, event-loop lag, GC, handles) describe the process, not
 * a context: one registry per process, so the event-loop monitor and the GC observer run once however many
 * apps a test process builds. Created by the first primary origin, so a CLI command never starts them.
 */
let processRegistry: Registry | null = null;
function defaultProcessMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export function createMetrics(database?: Database): Metrics {
  const registry = new Registry();
  const origins = new Map<ListenerName, HttpRequestMetrics>();
  const originOf = (origin: ListenerName) => {
    let http = origins.get(origin);
    if (!http) origins.set(origin, (http = new HttpRequestMetrics(origin, LATENCY_BUCKETS)));
    return http;
  };
  const existing = <M>(name: string) => registry.getSingleMetric(name) as M | undefined;

  const metrics: Metrics = {
    registry,
    http: originOf,
    scraper(origin, primary) {
      const http = originOf(origin);
      if (!primary) return async () => http.text();
      const defaults = defaultProcessMetrics();
      return async () => {
        const own = http.text();
        const [shared, process] = await Promise.all([registry.metrics(), defaults.metrics()]);
        return own + shared + process;
      };
    },
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
      return existing(name) ?? new Counter({ name, help, labelNames, registers: [registry] });
    },
    histogram(name, help, labelNames, buckets = LATENCY_BUCKETS) {
      return existing(name) ?? new Histogram({ name, help, labelNames, buckets, registers: [registry] });
    },
  };
  if (database) registerDatabaseMetrics(metrics, database);
  return metrics;
}

/**
 * Query latency by statement kind (each query costs one observe on a child looked up once) and the
 * connection pool, read at scrape time.
 */
function registerDatabaseMetrics(metrics: Metrics, database: Database): void {
  const duration = metrics.histogram('tollgate_db_query_duration_seconds', 'Database statement latency by kind (select, insert, update, delete, transaction, other)', ['operation'], QUERY_BUCKETS);
  const byOperation = new Map(QUERY_OPERATIONS.map((operation) => [operation, duration.labels({ operation })]));
  database.observeQueries((operation, seconds) => byOperation.get(operation)!.observe(seconds));
  const pool = (name: string, help: string, value: (stats: ReturnType<Database['pool']>) => number) =>
    metrics.gauge(name, help, [], (set) => set({}, value(database.pool())));
  pool('tollgate_db_pool_max_connections', 'Connections the pool may open (DATABASE_POOL_SIZE; 1 for PGlite)', (stats) => stats.max);
  pool('tollgate_db_pool_connections', 'Connections open now (PGlite: its one)', (stats) => stats.total);
  pool('tollgate_db_pool_idle_connections', 'Open connections not running a query or transaction', (stats) => stats.idle);
  pool('tollgate_db_pool_waiting_queries', 'Queries waiting for a connection', (stats) => stats.waiting);
}
