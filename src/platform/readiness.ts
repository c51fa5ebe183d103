// Readiness (`GET /ready`): named checks that each part of the process registers (the database,
// the chain RPC, relayer gas, background loops), run together under one deadline. A check that
// throws or does not answer in time counts as failing: a probe must never hang on a dead part.

export interface CheckResult {
  ok: boolean;
  /** Why it fails, in words an operator can act on. */
  reason?: string;
  /** Figures worth seeing either way (lag, balances). */
  detail?: Record<string, unknown>;
}

export type ReadinessCheck = () => Promise<CheckResult>;

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, CheckResult & { ms: number }>;
}

export class Readiness {
  readonly #checks = new Map<string, ReadinessCheck>();

  constructor(private readonly timeoutMs = 2_000) {}

  add(name: string, check: ReadinessCheck): void {
    this.#checks.set(name, check);
  }

  async report(): Promise<ReadinessReport> {
    const entries = await Promise.all(
      [...this.#checks].map(async ([name, check]) => {
        const started = performance.now();
        const result = await withDeadline(check, this.timeoutMs);
        return [name, { ...result, ms: Math.round(performance.now() - started) }] as const;
      }),
    );
    return { ready: entries.every(([, result]) => result.ok), checks: Object.fromEntries(entries) };
  }
}

/** Runs one check: a throw or no answer within `timeoutMs` is a failing result, never an exception. */
export async function withDeadline(check: ReadinessCheck, timeoutMs: number): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, reason: `no answer within ${timeoutMs} ms` }), timeoutMs);
  });
  try {
    return await Promise.race([check().catch((error: unknown) => ({ ok: false, reason: messageOf(error) })), late]);
  } finally {
    clearTimeout(timer);
  }
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error)).slice(0, 300);
