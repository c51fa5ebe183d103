import type { Clock } from '../../platform/clock.js';
import type { Db, Executor } from '../../platform/db.js';
import type { ApiError } from '../../platform/http/errors.js';
import { envelopeCodeFor } from '../../platform/http/envelope-codes.js';
import { newIds, UUID_PATTERN } from '../../platform/ids.js';
import { isoTime } from '../../platform/iso-time.js';
import type { SecretHasher } from '../../platform/secrets.js';
import { eventNotFound, queueNotFound } from './errors.js';
import { EventBatchStore, type ClaimedRow, type LeaseItem } from './event-batch-store.js';
import { assertPayloadSize, leaseFailure, tokenHashes, type Claimed, type ClaimOptions, type EventService, type LeaseOperation, type PublishInput } from './event-service.js';
import type { EventStoreOptions } from './event-read-store.js';
import type { EventRow, EventStatus } from './event-rows.js';
import { NACK_BACKOFF } from './limits.js';
import { QueueStore } from './queue-store.js';

/** One item's answer in a batch ack or nack: each lease succeeds or fails on its own. */
export type LeaseResult =
  | ({ eventId: string; ok: true } & Outcome)
  | { eventId: string; ok: false; error: { code: number; reason: string; message: string } };

export interface NackInput {
  eventId: string;
  leaseToken: string;
  error?: string;
  retryDelaySeconds?: number;
}

/**
 * Batches of the Events API (extensions): publish, claim, ack and nack many events per request.
 * Each is one statement for the whole batch, with the single-event semantics per event: the same
 * deduplication, the same lease tokens and expiry, the same precise answers when a lease is gone.
 */
export class EventBatchService {
  private readonly store: EventBatchStore;
  private readonly queues: QueueStore;

  constructor(
    db: Db,
    private readonly clock: Clock,
    private readonly hasher: SecretHasher,
    private readonly events: EventService,
    private readonly storeOptions: EventStoreOptions,
  ) {
    this.store = new EventBatchStore(db, storeOptions);
    this.queues = new QueueStore(db);
  }

  /**
   * Publishes the events in order (ids ascending, so claims hand them out in that order). Each
   * answer is the new event's id (`created`), or the id of the event that already held its
   * deduplication key.
   */
  async publishMany(projectId: string, queueId: string, inputs: readonly PublishInput[]): Promise<{ id: string; created: boolean }[]> {
    if (!UUID_PATTERN.test(queueId)) throw queueNotFound();
    inputs.forEach((input) => assertPayloadSize(input.payload));
    const now = this.clock.now();
    // Ids generated in one millisecond are random past their timestamp: sort them to keep input order.
    const ids = newIds(inputs.length, now.getTime()).sort();
    const items = inputs.map((input, i) => ({
      id: ids[i],
      payload: input.payload,
      deduplicationKey: input.deduplicationKey ?? null,
      delaySeconds: input.delaySeconds ?? 0,
    }));
    const inserted = await this.store.insertMany({ projectId, queueId, items, now });
    if (inserted.size === 0 && !(await this.queues.get(projectId, queueId))) throw queueNotFound();
    if (items.some((item) => item.delaySeconds === 0 && inserted.has(item.id))) this.events.announce(queueId);

    const missingKeys = items.filter((item) => !inserted.has(item.id)).map((item) => item.deduplicationKey!);
    const holders = await this.store.idsByDeduplicationKeys(projectId, queueId, missingKeys);
    return items.map((item) => {
      if (inserted.has(item.id)) return { id: item.id, created: true };
      const held = holders.get(item.deduplicationKey!);
      // Inserted nowhere and held by no event: the key's holder was deleted meanwhile (its queue went).
      if (!held) throw queueNotFound();
      return { id: held, created: false };
    });
  }

  /**
   * Publishes into the project's queue inside the caller's transaction `tx`, so the events commit (or
   * roll back) with the caller's own change: another module's exactly-once publication (payment-intent
   * events). A deduplication key already used in the queue publishes nothing, and so does a queue that is
   * not the project's (or no longer exists): no error, since the caller's change must not fail for it.
   * Returns how many events were inserted. Nothing is announced here, the transaction being uncommitted:
   * call `announce(queueId)` after the commit (claims waiting on other nodes also re-check each second).
   */
  async publishInTransaction(tx: Executor, projectId: string, queueId: string, inputs: readonly PublishInput[]): Promise<number> {
    if (inputs.length === 0 || !UUID_PATTERN.test(queueId)) return 0;
    inputs.forEach((input) => assertPayloadSize(input.payload));
    const now = this.clock.now();
    const ids = newIds(inputs.length, now.getTime()).sort();
    const items = inputs.map((input, i) => ({ id: ids[i], payload: input.payload, deduplicationKey: input.deduplicationKey ?? null, delaySeconds: input.delaySeconds ?? 0 }));
    const inserted = await new EventBatchStore(tx, this.storeOptions).insertMany({ projectId, queueId, items, now });
    return inserted.size;
  }

  /** Wakes the queue's waiting claims, here and (NOTIFY) on other nodes: after a commit that published into it. */
  announce(queueId: string): void {
    this.events.announce(queueId);
  }

  /**
   * Leases up to `maxEvents` of the oldest claimable events, waiting up to `waitSeconds` for the
   * first one; an empty list when none came. Events of capped schedules are leased one at a time
   * under their schedule's lock, after the uncapped ones.
   */
  async claimMany(projectId: string, queueId: string, maxEvents: number, options: ClaimOptions = {}): Promise<Claimed[]> {
    const claimed = await this.events.waitForClaim<Claimed[]>(projectId, queueId, options, {
      attempt: async () => {
        const leased = await this.tryClaimMany(projectId, queueId, maxEvents, options.leaseSeconds ?? null);
        return leased.length > 0 ? leased : null;
      },
      release: (leased) => this.events.unclaim(queueId, leased),
    });
    return claimed ?? [];
  }

  private async tryClaimMany(projectId: string, queueId: string, maxEvents: number, leaseSeconds: number | null): Promise<Claimed[]> {
    const claimToken = this.hasher.issueToken();
    const rows = await this.store.claimMany({ projectId, queueId, leaseSeconds, limit: maxEvents, tokenHash: claimToken.hash, now: this.clock.now() });
    return this.topUp(projectId, queueId, maxEvents, leaseSeconds, leasesOf(rows, claimToken.token));
  }

  /** A short batch may mean events of capped schedules are waiting: those go one by one. */
  private async topUp(projectId: string, queueId: string, maxEvents: number, leaseSeconds: number | null, claimed: Claimed[]): Promise<Claimed[]> {
    while (claimed.length < maxEvents) {
      const one = await this.events.tryClaim(projectId, queueId, leaseSeconds);
      if (!one) break;
      claimed.push(one);
    }
    return claimed;
  }

  /**
   * Acks the leases, each answered on its own as ackMany answers, then claims up to `maxEvents` of the
   * queue as claimMany does: one statement (one commit) when the claim finds events at once. When it
   * finds none, or other claims wait on the queue (their turn comes first), the claim is claimMany's,
   * long poll and "no such queue" included, after the acks.
   */
  async ackAndClaim(
    projectId: string,
    queueId: string,
    leases: readonly { eventId: string; leaseToken: string }[],
    maxEvents: number,
    options: ClaimOptions = {},
  ): Promise<{ acked: LeaseResult[]; claimed: Claimed[] }> {
    if (!UUID_PATTERN.test(queueId) || this.events.hasWaitingClaims(queueId)) {
      const acked = await this.ackMany(projectId, leases);
      return { acked, claimed: await this.claimMany(projectId, queueId, maxEvents, options) };
    }
    const items = this.leaseItems(leases);
    const valid = items.filter((item) => UUID_PATTERN.test(item.eventId));
    const leaseSeconds = options.leaseSeconds ?? null;
    const claimToken = this.hasher.issueToken();
    const result = await this.store.ackAndClaimMany({ projectId, queueId, leaseSeconds, limit: maxEvents, tokenHash: claimToken.hash, items: valid, now: this.clock.now() });
    const acked = await this.answer(projectId, items, 'ack', ackedOutcomes(result.acked));
    const claimed = result.claimed.length
      ? await this.topUp(projectId, queueId, maxEvents, leaseSeconds, leasesOf(result.claimed, claimToken.token))
      : await this.claimMany(projectId, queueId, maxEvents, options);
    return { acked, claimed };
  }

  /** Acks each lease on its own; repeating an ack with the same token answers the acked event. */
  async ackMany(projectId: string, leases: readonly { eventId: string; leaseToken: string }[]): Promise<LeaseResult[]> {
    const items = this.leaseItems(leases);
    const valid = items.filter((item) => UUID_PATTERN.test(item.eventId));
    const acked = valid.length ? await this.store.ackMany({ projectId, items: valid, now: this.clock.now() }) : new Set<string>();
    return this.answer(projectId, items, 'ack', ackedOutcomes(acked));
  }

  /** Nacks each lease on its own: retried after its delay (default backoff), or `dead` after the last attempt. */
  async nackMany(projectId: string, leases: readonly NackInput[]): Promise<LeaseResult[]> {
    const items = this.leaseItems(leases).map((item, i) => ({
      ...item,
      error: leases[i].error ?? 'nacked without an error message',
      retryDelaySeconds: leases[i].retryDelaySeconds ?? null,
    }));
    const valid = items.filter((item) => UUID_PATTERN.test(item.eventId));
    const now = this.clock.now();
    const rows = valid.length ? await this.store.nackMany({ projectId, items: valid, backoff: NACK_BACKOFF, now }) : [];
    const due = rows.filter((row) => row.status === 'available' && row.availableAt <= now);
    for (const queueId of new Set(due.map((row) => row.queueId))) this.events.announce(queueId);
    return this.answer(projectId, items, 'nack', new Map(rows.map((row) => [row.id, outcomeOf(row)])));
  }

  /** The leases with their tokens' hashes: one hash per distinct token (a batch claim's events share theirs). */
  private leaseItems(leases: readonly { eventId: string; leaseToken: string }[]): LeaseItem[] {
    const hashOf = tokenHashes(this.hasher);
    return leases.map(({ eventId, leaseToken }) => ({ eventId, tokenHash: hashOf(leaseToken) }));
  }

  /**
   * Each item's answer, in input order: the event's new status, or why its lease was refused (the
   * refused events are read once, together). An event named twice is changed once; its repeat is
   * answered as a repeated single call would be (a second ack with the same token is fine).
   */
  private async answer(projectId: string, items: readonly LeaseItem[], operation: LeaseOperation, changed: Map<string, Outcome>): Promise<LeaseResult[]> {
    const firsts = new Set<number>();
    const seen = new Set<string>();
    items.forEach((item, i) => {
      if (changed.has(item.eventId) && !seen.has(item.eventId)) firsts.add(i);
      seen.add(item.eventId);
    });
    const refusedIds = items.filter((item, i) => !firsts.has(i) && UUID_PATTERN.test(item.eventId)).map((item) => item.eventId);
    const current = new Map((await this.store.getMany(projectId, [...new Set(refusedIds)])).map((row) => [row.id, row]));
    return items.map((item, i) => {
      if (firsts.has(i)) return { eventId: item.eventId, ok: true, ...changed.get(item.eventId)! };
      const row = current.get(item.eventId) ?? null;
      const failure = UUID_PATTERN.test(item.eventId) ? leaseFailure(row, item.tokenHash, operation) : eventNotFound();
      return failure ? { eventId: item.eventId, ok: false, error: itemError(failure) } : { eventId: item.eventId, ok: true, ...outcomeOf(row!) };
    });
  }
}

/** What a changed event became: its status, and when it is offered again (after a nack to `available`). */
interface Outcome {
  status: EventStatus;
  availableAt: string | null;
}

const ackedOutcomes = (ids: Set<string>) => new Map<string, Outcome>([...ids].map((id) => [id, { status: 'acked', availableAt: null }]));

/** The claimed rows as leases, in claim order, all with the claim's one token. */
const leasesOf = (rows: readonly ClaimedRow[], leaseToken: string): Claimed[] =>
  rows.map(({ row }) => ({ event: row, leaseToken, leaseExpiresAt: row.leaseExpiresAt! }));

const outcomeOf = (row: EventRow): Outcome => ({ status: row.status, availableAt: row.status === 'available' ? isoTime(row.availableAt) : null });

const itemError = (error: ApiError) => ({ code: envelopeCodeFor(error.status), reason: error.code, message: error.message });
