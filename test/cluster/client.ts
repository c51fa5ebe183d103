// How the load's clients talk to the cluster: a request whose connection dies (its node was killed under
// it, or no node was up) is a lost answer, counted and retried the way a real client would, never a
// violation. Counts are shared by every load generator.
export interface Counts {
  kills: number;
  restarts: number;
  /** Requests whose answer was lost (connection dropped or refused, or 503 with no node up). */
  lostAnswers: number;
  /** Attempts after the first of an operation (a lost answer, a "try again"). */
  retries: number;
  /** Operations given up after their retries (the cluster never answered them usefully): reported, not a violation. */
  gaveUp: number;
}

export const counts: Counts = { kills: 0, restarts: 0, lostAnswers: 0, retries: 0, gaveUp: 0 };

/** What each operation given up last heard, for the timeline. */
export const gaveUpLog: string[] = [];

export function giveUp(kind: string, last: string): void {
  counts.gaveUp += 1;
  gaveUpLog.push(`${kind}: ${last}`.slice(0, 300));
}

/** Operations by kind (each counted once, whatever its retries). */
export const ops: Record<string, number> = {};

export function countOp(kind: string, n = 1): void {
  ops[kind] = (ops[kind] ?? 0) + n;
}

export interface Answer {
  /** null: the answer was lost. */
  status: number | null;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  headers: Headers | null;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One HTTP request; a dropped connection (or the balancer's "no node up") is a lost answer. */
export async function request(url: string, init: { method?: string; headers?: Record<string, string>; json?: unknown; body?: RequestInit['body']; timeoutMs?: number } = {}): Promise<Answer> {
  try {
    const res = await fetch(url, {
      method: init.method ?? (init.json === undefined && init.body === undefined ? 'GET' : 'POST'),
      headers: { ...(init.json === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
      body: init.json === undefined ? init.body : JSON.stringify(init.json),
      signal: AbortSignal.timeout(init.timeoutMs ?? 45_000),
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: kept as text
    }
    if (res.status === 503 && (body as { message?: string })?.message === 'no api node is up') {
      counts.lostAnswers += 1;
      return { status: null, body: null, headers: null };
    }
    return { status: res.status, body, headers: res.headers };
  } catch {
    counts.lostAnswers += 1;
    return { status: null, body: null, headers: null };
  }
}

/**
 * Runs `task` for each item with at most `limit` in flight, item i not before `spanMs × i / items`
 * after the start: the operations are spread over the chaos instead of racing through its first seconds.
 */
export async function inFlight<T>(limit: number, items: T[], spanMs: number, task: (item: T, index: number) => Promise<void>): Promise<void> {
  const start = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        const due = start + (spanMs * i) / items.length;
        if (due > Date.now()) await sleep(due - Date.now());
        await task(items[i]!, i);
      }
    }),
  );
}
