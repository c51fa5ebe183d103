// One origin's request series: `tollgate_http_requests_total` and `tollgate_http_request_duration_seconds`
// by origin, method, route pattern and status. Recorded on every request, so a request allocates nothing:
// each route's per-request work holds its recorder (`forRoute`, made once when the route is registered) and hands it to the request,
// which calls it when its answer completes (answer-metrics.ts); it looks up the method and the status and adds to plain numbers; the Prometheus text is built only when /metrics is
// scraped. (prom-client's labelled children re-validate and re-hash their labels and allocate on every inc
// and observe: about 2 µs a request, measured in bench/health.)

const REQUESTS = 'tollgate_http_requests_total';
const DURATION = 'tollgate_http_request_duration_seconds';

/** Per-bucket (not cumulative) counts, the sum in seconds, and the count. */
interface Series {
  count: number;
  sum: number;
  buckets: number[];
}

export class HttpRequestMetrics {
  /** route → method → status → series: a request looks up three keys and builds no string. */
  private readonly routes = new Map<string, Map<string, Map<number, Series>>>();

  constructor(
    private readonly origin: string,
    /** Upper bounds in seconds, ascending. */
    private readonly buckets: readonly number[],
  ) {}

  /**
   * The recorder of one route pattern, for its hook to hold: each call counts one answered request, `milliseconds`
   * its latency (Fastify's `reply.elapsedTime`), and looks up two keys, not three.
   * The route's series are made at its first request, not here, so the text lists series in the order they
   * were first seen, as prom-client does.
   */
  forRoute(route: string): (method: string, status: number, milliseconds: number) => void {
    let methods: Map<string, Map<number, Series>> | undefined;
    return (method, status, milliseconds) => this.count((methods ??= this.methodsOf(route)), method, status, milliseconds);
  }

  private methodsOf(route: string): Map<string, Map<number, Series>> {
    let methods = this.routes.get(route);
    if (methods === undefined) this.routes.set(route, (methods = new Map()));
    return methods;
  }

  private count(methods: Map<string, Map<number, Series>>, method: string, status: number, milliseconds: number): void {
    let statuses = methods.get(method);
    if (statuses === undefined) methods.set(method, (statuses = new Map()));
    let series = statuses.get(status);
    if (series === undefined) statuses.set(status, (series = { count: 0, sum: 0, buckets: this.buckets.map(() => 0) }));
    const seconds = milliseconds / 1000;
    series.count += 1;
    series.sum += seconds;
    // Above the last bound it lands in +Inf only, which is the count.
    const bounds = this.buckets;
    for (let i = 0; i < bounds.length; i++) {
      if (seconds <= bounds[i]!) {
        series.buckets[i]! += 1;
        break;
      }
    }
  }

  /** Both families in the Prometheus text format (as prom-client writes them), HELP and TYPE even before a request. */
  text(): string {
    const counts: string[] = [
      `# HELP ${REQUESTS} HTTP requests by origin, method, route pattern and status`,
      `# TYPE ${REQUESTS} counter`,
    ];
    const latency: string[] = [
      `# HELP ${DURATION} HTTP request latency by origin, method, route pattern and status`,
      `# TYPE ${DURATION} histogram`,
    ];
    for (const [route, methods] of this.routes) {
      for (const [method, statuses] of methods) {
        for (const [status, series] of statuses) {
          const labels = `origin="${escape(this.origin)}",method="${escape(method)}",route="${escape(route)}",status="${status}"`;
          counts.push(`${REQUESTS}{${labels}} ${series.count}`);
          let cumulative = 0;
          this.buckets.forEach((bound, i) => {
            cumulative += series.buckets[i]!;
            latency.push(`${DURATION}_bucket{le="${bound}",${labels}} ${cumulative}`);
          });
          latency.push(`${DURATION}_bucket{le="+Inf",${labels}} ${series.count}`);
          latency.push(`${DURATION}_sum{${labels}} ${series.sum}`);
          latency.push(`${DURATION}_count{${labels}} ${series.count}`);
        }
      }
    }
    return `${counts.join('\n')}\n\n${latency.join('\n')}\n`;
  }
}

/** Label value escaping of the text format: backslash, double quote, newline. */
const escape = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
