import { sql } from 'drizzle-orm';
import type { Clock } from '../../platform/clock.js';
import type { Database } from '../../platform/db.js';
import type { ApiError } from '../../platform/http/errors.js';
import { newId, UUID_PATTERN } from '../../platform/ids.js';
import type { SecretHasher } from '../../platform/secrets.js';
import { eventNotFound, leaseExpired, leaseReleased, leaseTokenMismatch, payloadTooLarge, queueNotFound } from './errors.js';
import type { EventStoreOptions, QueueStatsRow } from './event-read-store.js';
import type { EventRow, EventStatus } from './event-rows.js';
import { EventStore } from './event-store.js';
import { LIMITS, NACK_BACKOFF } from './limits.js';
import { QueueStore } from './queue-store.js';
import { rowsOf } from '../../platform/sql-rows.js';
import type { QueueNotifier } from './notifier.js';
import type { ClaimWaiters } from './waiters.js';

export interface PublishInput {
  payload: Record<string, unknown>;
  deduplicationKey?: string;
  delaySeconds?: number;
}

export interface ClaimOptions {
  leaseSeconds?: number;
  waitSeconds?: number;
  signal?: AbortSignal;
}

export interface Claimed {
  event: EventRow;
  leaseToken: string;
  leaseExpiresAt: Date;
}

export interface Redriven {
  /** The events moved back to `available`, by id. */
  eventIds: string[];
  /** Named events that were not moved: `status` null when the queue holds no such event. */
  notRedriven: { eventId: string; status: EventStatus | null }[];
  /** "all" stopped at its limit while dead events remain: call again. */
  more: boolean;
}

export type LeaseOperation = 'heartbeat' | 'ack' | 'nack';

/** The hasher's keyed hash of a lease token, computed once per distinct token (a batch claim's events share one). */
export function tokenHashes(hasher: SecretHasher): (token: string) => string {
  const hashes = new Map<string, string>();
  return (token) => {
    let hash = hashes.get(token);
    if (hash === undefined) hashes.set(token, (hash = hasher.hash(token)));
    return hash;
  };
}

/**
 * Why a lease operation with this token matched no row, or null when there is nothing to refuse
 * (repeating an ack with the same token answers the acked event: acks are idempotent).
 */
export function leaseFailure(row: EventRow | null, tokenHash: string, operation: LeaseOperation): ApiError | null {
  if (!row) return eventNotFound();
  if (row.leaseTokenHash !== tokenHash) return leaseTokenMismatch();
  if (operation === 'ack' && row.status === 'acked') return null;
  // ack and nack clear lease_expires_at; only a lease that ran out keeps it.
  if (row.status === 'leased' || row.leaseExpiresAt !== null) return leaseExpired(row.leaseExpiresAt);
  return leaseReleased(row.status);
}

/** How often one claim may meet a capped schedule or lose a race before it answers "no work". */
const CLAIM_ROUNDS = 20;

export function assertPayloadSize(payload: Record<string, unknown>): void {
  if (Buffer.byteLength(JSON.stringify(payload)) > LIMITS.payloadBytes) throw payloadTooLarge(LIMITS.payloadBytes);
}

/**
 * Publishing and lease-based consumption (at-least-once). A claim leases the oldest claimable event
 * for a secret token; heartbeat, ack and nack succeed only with the current token before expiry.
 */
export class EventService {
  private readonly store: EventStore;
  private readonly queues: QueueStore;

  constructor(
    private readonly database: Database,
    private readonly clock: Clock,
    private readonly hasher: SecretHasher,
    private readonly waiters: ClaimWaiters,
    private readonly notifier: QueueNotifier,
    private readonly storeOptions: EventStoreOptions,
  ) {
    this.store = new EventStore(database.db, storeOptions);
    this.queues = new QueueStore(database.db);
  }

  /** The new event (`created`), or the existing one when the deduplication key was used before. */
  async publish(projectId: string, queueId: string, input: PublishInput): Promise<{ event: EventRow; created: boolean }> {
    if (!UUID_PATTERN.test(queueId)) throw queueNotFound();
    assertPayloadSize(input.payload);
    const now = this.clock.now();
    const delaySeconds = input.delaySeconds ?? 0;
    const deduplicationKey = input.deduplicationKey ?? null;
    const event = await this.store.insert({ id: newId(now.getTime()), projectId, queueId, payload: input.payload, deduplicationKey, delaySeconds, now });
    if (event) {
      if (delaySeconds === 0) this.announce(queueId);
      return { event, created: true };
    }
    const existing = deduplicationKey ? await this.store.findByDeduplicationKey(projectId, queueId, deduplicationKey) : null;
    if (!existing) throw queueNotFound();
    return { event: existing, created: false };
  }

  /** Leases the oldest claimable event, waiting up to `waitSeconds` for one; null when none came. */
  async claim(projectId: string, queueId: string, options: ClaimOptions = {}): Promise<Claimed | null> {
    return this.waitForClaim(projectId, queueId, options, {
      attempt: () => this.tryClaim(projectId, queueId, options.leaseSeconds ?? null),
      release: (claimed) => this.unclaim(queueId, [claimed]),
      // tryClaim's statement tells an empty queue from a missing one (and throws for the latter).
      checksQueue: true,
    });
  }

  /**
   * Runs `attempt` until it leases something or `waitSeconds` pass (a long poll), in line with the
   * queue's other waiting claims. `release` undoes a lease nobody received (the client left).
   */
  async waitForClaim<T>(
    projectId: string,
    queueId: string,
    options: ClaimOptions,
    claim: { attempt: () => Promise<T | null>; release: (value: T) => Promise<void>; checksQueue?: boolean },
  ): Promise<T | null> {
    if (!UUID_PATTERN.test(queueId)) throw queueNotFound();
    let queueChecked = claim.checksQueue === true;
    // Claims waiting here means the queue is idle: this claim will queue up without trying, so make
    // sure first that the queue is the caller's (the line is per queue, not per project).
    if (this.hasWaitingClaims(queueId)) {
      queueChecked = true;
      if (!(await this.queues.get(projectId, queueId))) throw queueNotFound();
    }
    return this.waiters.claim<T>({
      queueId,
      waitMs: (options.waitSeconds ?? 0) * 1000,
      signal: options.signal,
      attempt: async () => {
        const claimed = await claim.attempt();
        // "Nothing to claim" may mean "no such queue here": ask once, before waiting on it.
        if (!claimed && !queueChecked) {
          queueChecked = true;
          if (!(await this.queues.get(projectId, queueId))) throw queueNotFound();
        }
        return claimed;
      },
      release: claim.release,
    });
  }

  /** Claims wait in line on the queue here: it is idle, and a new claim must queue behind them. */
  hasWaitingClaims(queueId: string): boolean {
    return this.waiters.waitingCount(queueId) > 0;
  }

  /** Undoes leases nobody received: the attempts do not count, and waiting claims may take them. */
  async unclaim(queueId: string, claimed: readonly Claimed[]): Promise<void> {
    const hashOf = tokenHashes(this.hasher);
    for (const { event, leaseToken } of claimed) await this.store.unclaim(event.id, hashOf(leaseToken), this.clock.now());
    this.announce(queueId);
  }

  /** Counts leases that ran out and were taken over by a claim (the sweeper counts the rest). */
  private async recordTakeovers(queueId: string, count: number): Promise<void> {
    await this.store.recordLeaseExpiries(queueId, count);
  }

  /**
   * One claim without waiting (one statement unless a capped schedule is met); also the batch claim's
   * path for events of capped schedules. Null when there is nothing to claim; 404 when the project has
   * no such queue.
   */
  async tryClaim(projectId: string, queueId: string, leaseSeconds: number | null): Promise<Claimed | null> {
    const skipSchedules: string[] = [];
    for (let round = 0; round < CLAIM_ROUNDS; round++) {
      const { token, hash } = this.hasher.issueToken();
      const now = this.clock.now();
      const attempt = await this.store.claimNext({ projectId, queueId, leaseSeconds, tokenHash: hash, now, skipSchedules });
      if (attempt.kind === 'none') {
        if (!attempt.queueFound) throw queueNotFound();
        return null;
      }
      // claimNext counted its own takeover; the capped path counts here.
      let leased: { row: EventRow } | null = attempt.kind === 'claimed' ? attempt : null;
      if (attempt.kind === 'capped') {
        const capped = await this.claimUnderCap(attempt.eventId, attempt.scheduleId, leaseSeconds, hash, now);
        if (capped === 'full') skipSchedules.push(attempt.scheduleId);
        else if (capped) {
          if (capped.tookOver) await this.recordTakeovers(queueId, 1);
          leased = capped;
        }
      }
      if (leased) return { event: leased.row, leaseToken: token, leaseExpiresAt: leased.row.leaseExpiresAt! };
    }
    return null;
  }

  /**
   * Leases an event of a schedule with `maxConcurrency` while holding the schedule's row lock, so
   * concurrent claimers count running leases one at a time and never exceed the cap.
   */
  private claimUnderCap(eventId: string, scheduleId: string, leaseSeconds: number | null, tokenHash: string, now: Date) {
    return this.database.db.transaction(async (tx) => {
      const [schedule] = await rowsOf<{ maxConcurrency: number | null }>(
        tx,
        sql`select max_concurrency as "maxConcurrency" from event_schedules where id = ${scheduleId} for update`,
      );
      const store = new EventStore(tx, this.storeOptions);
      const cap = schedule?.maxConcurrency ?? null;
      if (cap !== null && (await store.countActiveLeases(scheduleId, now)) >= cap) return 'full' as const;
      return store.claimById({ eventId, leaseSeconds, tokenHash, now });
    });
  }

  /** Extends the caller's lease to now + leaseSeconds (the queue's default lease when omitted). */
  async heartbeat(projectId: string, eventId: string, leaseToken: string, leaseSeconds?: number): Promise<EventRow> {
    const input = this.leaseInput(projectId, eventId, leaseToken);
    const row = await this.store.heartbeat({ ...input, leaseSeconds: leaseSeconds ?? null });
    return row ?? this.explainLeaseFailure(input, 'heartbeat');
  }

  /** Completes the event. Repeating an ack with the same token answers the same (idempotent). */
  async ack(projectId: string, eventId: string, leaseToken: string): Promise<EventRow> {
    const input = this.leaseInput(projectId, eventId, leaseToken);
    const row = await this.store.ack(input);
    return row ?? this.explainLeaseFailure(input, 'ack');
  }

  /**
   * ack, then a claim on `next.queueId` as claim() makes it (ack's `next`, an extension). One statement when the claim
   * can be made at once and no claim of this node waits on that queue (it would pass them); otherwise, or when that
   * statement leased nothing, the rest as ack() and claim() do it.
   */
  async ackAndClaim(projectId: string, eventId: string, leaseToken: string, next: ClaimOptions & { queueId: string }): Promise<{ acked: EventRow; next: Claimed | null }> {
    const input = this.leaseInput(projectId, eventId, leaseToken);
    if (!UUID_PATTERN.test(next.queueId) || this.hasWaitingClaims(next.queueId)) {
      const acked = (await this.store.ack(input)) ?? (await this.explainLeaseFailure(input, 'ack'));
      return { acked, next: await this.claim(projectId, next.queueId, next) };
    }
    const { token, hash } = this.hasher.issueToken();
    const claimInput = { projectId, queueId: next.queueId, leaseSeconds: next.leaseSeconds ?? null, tokenHash: hash, now: input.now, skipSchedules: [] };
    const { acked, claim } = await this.store.ackThenClaim(input, claimInput);
    if (!acked) return { acked: await this.explainLeaseFailure(input, 'ack'), next: await this.claim(projectId, next.queueId, next) };
    if (claim.kind === 'claimed') return { acked, next: { event: claim.row, leaseToken: token, leaseExpiresAt: claim.row.leaseExpiresAt! } };
    if (claim.kind === 'none' && !claim.queueFound) throw queueNotFound();
    if (claim.kind === 'none' && !next.waitSeconds) return { acked, next: null };
    return { acked, next: await this.claim(projectId, next.queueId, next) };
  }

  /** Fails this delivery: retried after the delay (default backoff), or `dead` after the last attempt. */
  async nack(projectId: string, eventId: string, leaseToken: string, options: { error?: string; retryDelaySeconds?: number } = {}): Promise<EventRow> {
    const input = this.leaseInput(projectId, eventId, leaseToken);
    const row = await this.store.nack({
      ...input,
      error: options.error ?? 'nacked without an error message',
      retryDelaySeconds: options.retryDelaySeconds ?? null,
      backoff: NACK_BACKOFF,
    });
    if (!row) return this.explainLeaseFailure(input, 'nack');
    if (row.status === 'available' && row.availableAt <= input.now) this.announce(row.queueId);
    return row;
  }

  async get(projectId: string, eventId: string): Promise<EventRow> {
    const row = UUID_PATTERN.test(eventId) ? await this.store.get(projectId, eventId) : null;
    if (!row) throw eventNotFound();
    return row;
  }

  async listDead(projectId: string, queueId: string, limit: number, before: string | null): Promise<EventRow[]> {
    if (!UUID_PATTERN.test(queueId)) throw queueNotFound();
    const rows = await this.store.listDead(projectId, queueId, limit, before);
    // An empty page may mean "no such queue": only then is it worth asking.
    if (rows.length === 0 && !(await this.queues.get(projectId, queueId))) throw queueNotFound();
    return rows;
  }

  /**
   * Puts dead events back to `available` with a fresh set of attempts, each exactly once: the named
   * ones (`eventIds`), or up to `limit` of the oldest. Named events that are not dead (or not there)
   * are answered with their status.
   */
  async redrive(projectId: string, queueId: string, target: { eventIds: readonly string[] } | { all: true; limit: number }): Promise<Redriven> {
    const queue = UUID_PATTERN.test(queueId) ? await this.queues.get(projectId, queueId) : null;
    if (!queue) throw queueNotFound();
    const named = 'eventIds' in target ? [...new Set(target.eventIds)] : null;
    const valid = named?.filter((id) => UUID_PATTERN.test(id)) ?? null;
    const limit = 'limit' in target ? target.limit : valid!.length;
    const eventIds = limit > 0 ? await this.store.redrive({ projectId, queueId, eventIds: valid, limit, now: this.clock.now() }) : [];
    if (eventIds.length > 0) this.announce(queueId);
    if (!named) return { eventIds, notRedriven: [], more: eventIds.length === limit && (await this.store.listDead(projectId, queueId, 1, null)).length > 0 };
    const moved = new Set(eventIds);
    const left = named.filter((id) => !moved.has(id));
    const rows = new Map((await this.store.getMany(projectId, left.filter((id) => UUID_PATTERN.test(id)))).map((row) => [row.id, row]));
    const statusOf = (id: string) => (rows.get(id)?.queueId === queueId ? rows.get(id)!.status : null);
    const notRedriven = left.map((id) => ({ eventId: id, status: statusOf(id) }));
    return { eventIds, notRedriven, more: false };
  }

  /** The queue's depth by state, the age of its oldest ready event, and its lease expiries so far. */
  async stats(projectId: string, queueId: string): Promise<QueueStatsRow> {
    const stats = UUID_PATTERN.test(queueId) ? await this.store.stats(projectId, queueId, this.clock.now()) : null;
    if (!stats) throw queueNotFound();
    return stats;
  }

  /** Open events of all queues by state and all lease expiries: operators' totals (/metrics), not any tenant's view. */
  openTotals() {
    return this.store.openTotals(this.clock.now());
  }

  now(): Date {
    return this.clock.now();
  }

  private leaseInput(projectId: string, eventId: string, leaseToken: string) {
    if (!UUID_PATTERN.test(eventId)) throw eventNotFound();
    return { projectId, eventId, tokenHash: this.hasher.hash(leaseToken), now: this.clock.now() };
  }

  /** Says precisely why a lease operation matched no row (the UPDATE itself cannot). */
  private async explainLeaseFailure(input: { projectId: string; eventId: string; tokenHash: string }, operation: LeaseOperation): Promise<EventRow> {
    const row = await this.store.get(input.projectId, input.eventId);
    const failure = leaseFailure(row, input.tokenHash, operation);
    if (failure) throw failure;
    return row!;
  }

  /** Wakes claimers waiting on the queue, here at once and on other nodes by NOTIFY. */
  announce(queueId: string): void {
    this.waiters.wake(queueId);
    this.notifier.signal(queueId);
  }
}
