// Bounds and defaults of the Events API (the spec leaves them open). The zod schemas enforce them
// and docs/events.md documents them; change them here only.

export const LIMITS = {
  queueName: { min: 1, max: 200 },
  leaseSeconds: { min: 5, max: 3600 },
  defaultLeaseSeconds: 30,
  maxAttempts: { min: 1, max: 100 },
  defaultMaxAttempts: 5,
  /** How long finished events (acked, dead, expired, superseded) are kept: 1 minute to 90 days. */
  retentionSeconds: { min: 60, max: 90 * 24 * 3600 },
  defaultRetentionSeconds: 7 * 24 * 3600,
  waitSeconds: { min: 0, max: 30 },
  delaySeconds: { min: 0, max: 7 * 24 * 3600 },
  retryDelaySeconds: { min: 0, max: 24 * 3600 },
  errorLength: 2000,
  deduplicationKey: { min: 1, max: 200 },
  /** Serialized JSON size of an event or schedule payload. */
  payloadBytes: 64 * 1024,
  externalId: { min: 1, max: 200 },
  scheduleName: { min: 1, max: 200 },
  maxConcurrency: { min: 1, max: 1000 },
  maxEventAgeSeconds: { min: 1, max: 30 * 24 * 3600 },
  listLimit: { min: 1, max: 100, default: 50 },
  /** Events per batch publish, leases per batch ack or nack, ids per redrive. */
  batchItems: { min: 1, max: 1000 },
  /** `maxEvents` of a batch claim. */
  claimMaxEvents: { min: 1, max: 100 },
  /** Dead events one "redrive all" moves back (call again while `more`). */
  redriveAll: 10_000,
} as const;

/** Default nack delay: min(base^attempts, cap) seconds (2, 4, 8, ... 300), attempts counting the failed delivery. */
export const NACK_BACKOFF = { base: 2, cap: 300 } as const;

/** Waiting claims re-check at least this often (delayed events, expired leases, lost notifications). */
export const CLAIM_RECHECK_MS = 1000;

/** Per queue, at most one NOTIFY per window after the first (bursts of publishes share it). */
export const NOTIFY_WINDOW_MS = 20;

/** The LISTEN/NOTIFY channel that says "queue <id> has a new available event". */
export const EVENTS_CHANNEL = 'tollgate_events';

/** The retention purge: rows deleted per statement, and statements per run (the loop runs again at once while full). */
export const PURGE = { batch: 1000, statementsPerRun: 4 } as const;
