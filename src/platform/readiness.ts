// Readiness (`GET /ready`): named checks that each part of the process registers (the database,
// the chain RPC, relayer gas, background loops), run together under one deadline. A check that
// throws or does not answer in time counts as failing: a probe must never hang on a dead part.
//
// Each check says which roles cannot serve while it fails. A failure that is critical for one of
// this process's roles makes it unready (503: take it out of rotation); any other failure only
// degrades it (200: it still serves most routes), so one RPC blip does not empty the api pool.
//
// `/ready` is public on every origin, and a failing check's text is often a library's error: viem's
// quote the RPC URL, whose path or query holds the provider's API key. So every result leaves
// withDeadline redacted (log-redaction.ts: URLs keep their host only), whoever wrote the check.
import type { Role } from './server-settings.js';
import { errorText, redactText, redactValue } from './log-redaction.js';

export interface CheckResult {
  ok: boolean;
  /** Why it fails, in words an operator can act on. */
  reason?: string;
  /** Figures worth seeing either way (lag, balances). */
  detail?: Record<string, unknown>;
}

export type ReadinessCheck = () => Promise<CheckResult>;

/** The roles that cannot do their job while a check fails: all of them, or the ones listed. */
export type CriticalFor = 'every role' | readonly Role[];

export type ReadinessStatus = 'ready' | 'degraded' | 'unready';

export interface ReadinessReport {
  /** False only when a check critical for one of this process's roles fails. */
  ready: boolean;
  /** ready: every check passes; degraded: only checks no role here depends on fail; unready: a critical one fails. */
  status: ReadinessStatus;
  /** Names of the failing checks, critical or not. */
  failing: string[];
  checks: Record<string, CheckResult & { ms: number; critical: boolean }>;
}

interface Registered {
  check: ReadinessCheck;
  critical: boolean;
}

export class Readiness {
  readonly #checks = new Map<string, Registered>();

  /** `roles`: what this process runs; a check is critical here when it is critical for any of them. */
  constructor(
    private readonly roles: readonly Role[],
    private readonly timeoutMs = 2_000,
  ) {}

  add(name: string, criticalFor: CriticalFor, check: ReadinessCheck): void {
    const critical = criticalFor === 'every role' || criticalFor.some((role) => this.roles.includes(role));
    this.#checks.set(name, { check, critical });
  }

  /** `timeoutMs`: each check's deadline (the metrics' scrape uses a shorter one than /ready, to answer within its own). */
  async report(timeoutMs = this.timeoutMs): Promise<ReadinessReport> {
    const entries = await Promise.all(
      [...this.#checks].map(async ([name, { check, critical }]) => {
        const started = performance.now();
        const result = await withDeadline(check, timeoutMs);
        return [name, { ...result, ms: Math.round(performance.now() - started), critical }] as const;
      }),
    );
    const failing = entries.filter(([, result]) => !result.ok);
    const ready = failing.every(([, result]) => !result.critical);
    const status: ReadinessStatus = !ready ? 'unready' : failing.length ? 'degraded' : 'ready';
    return { ready, status, failing: failing.map(([name]) => name), checks: Object.fromEntries(entries) };
  }
}

/**
 * Runs one check: a throw or no answer within `timeoutMs` is a failing result, never an exception.
 * The result's reason and detail come out redacted.
 */
export async function withDeadline(check: ReadinessCheck, timeoutMs: number): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, reason: `no answer within ${timeoutMs} ms` }), timeoutMs);
  });
  try {
    // Redacted before the cut, so a long request body cannot push the host out of the reason.
    const result = await Promise.race([check().catch((error: unknown) => ({ ok: false, reason: errorText(error).slice(0, 300) })), late]);
    return redacted(result);
  } finally {
    clearTimeout(timer);
  }
}

/** A check may also return a library's words (Kubo's RPC, a loop's last error) rather than throw them. */
const redacted = ({ reason, detail, ...rest }: CheckResult): CheckResult => ({
  ...rest,
  ...(reason === undefined ? {} : { reason: redactText(reason) }),
  ...(detail === undefined ? {} : { detail: redactValue(detail) }),
});
