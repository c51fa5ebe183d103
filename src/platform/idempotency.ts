// Idempotency-Key, as Stripe has it, for every call that moves money or buys something: one implementation,
// its records in PostgreSQL (so any api node answers a repeat, after restarts too).
//
// A key is scoped to the principal that sent it (a wallet, a user, a project, a management credential): the
// same key from someone else is another record. The first call with a key claims its record and works; its
// answer (status and body, or the error it ended with) is stored and every repeat with the same request gets
// it back. A repeat with another request is 409 `idempotency_conflict`. A repeat while the first still works
// waits for its answer (up to `waitMs`), then 409 `idempotency_in_progress`.
//
// Not stored (the record is released, so a repeat runs again): answers that say "nothing happened, try
// again" — 402 (a challenge), 429, 5xx — and throws that are not ApiErrors. A route whose work could have
// moved money before such an answer gives what it creates the record's stable `id` (the same for a scope
// and key whoever runs it), so a repeat finds it rather than making a second one.
//
// A node that dies mid-call leaves its record `running` with a lease it no longer renews (database time);
// once the lease lapses a repeat takes the record over and runs the work again with `resumed: true`. Work
// that is one database transaction can store its answer inside that transaction (`attempt.finishIn`), so the
// answer exists if and only if the work committed: a takeover then never finds work done without an answer.
import { createHash, randomUUID } from 'node:crypto';
import { and, eq, lt, sql } from 'drizzle-orm';
import { canonicalJson } from './canonical-json.js';
import { databaseNow, type Clock } from './clock.js';
import type { Db, Executor } from './db.js';
import { ApiError } from './http/errors.js';
import { idempotencyRecords } from './tables.js';

export interface IdempotencyOptions {
  /** How long a record is kept (and a repeat answered from it). */
  retentionSeconds: number;
  /** How long a repeat waits for a first call still working before 409 idempotency_in_progress. */
  waitMs: number;
  /** A working call's lease, renewed while it works; lapsed, a repeat may take the record over. */
  leaseSeconds: number;
}

export interface IdempotentCall {
  /** Who sent it: `wallet:<id>`, `user:<id>`, `project:<id>`, `mgmt:<id>`. */
  scope: string;
  key: string;
  /** Which operation (a route, a tool): the same key on another operation is a conflict. */
  operation: string;
  /** What was asked (params, query, body): hashed; another request under the key is a conflict. */
  request: unknown;
}

export interface Answer {
  status: number;
  body: unknown;
  /** Headers that are part of the answer (PAYMENT-RESPONSE): replayed with it. */
  headers?: Record<string, string>;
}

export interface Attempt {
  /** Stable for (scope, key): give it to what the call creates. */
  id: string;
  /** An earlier call with this key died while working: what it did may exist already. */
  resumed: boolean;
  /** Stores the answer inside the work's own transaction (the record is done iff the work committed). */
  finishIn(tx: Executor, answer: Answer): Promise<void>;
}

type Claim =
  | { kind: 'owner'; owner: string; id: string; resumed: boolean }
  | { kind: 'exists'; row: typeof idempotencyRecords.$inferSelect };

/** Writes a call's answer in the transaction that does its work (a route builds the Answer from `result`). */
export type AnswerRecorder<T> = (tx: Executor, result: T) => Promise<void>;

/** The `answer` column: what the call answered, or the error it ended with. */
type StoredAnswer = { body: unknown; headers?: Record<string, string> } | { error: { code: string; message: string; details?: unknown } };

/** Printable ASCII, 8 to 200 characters (echoed in logs, compared byte for byte): the relay's rule. */
export function checkedIdempotencyKey(key: string | string[] | undefined): string | null {
  if (key === undefined) return null;
  if (typeof key !== 'string' || !/^[\x21-\x7e]{8,200}$/.test(key)) {
    throw new ApiError(400, 'invalid_idempotency_key', 'Idempotency-Key must be 8 to 200 printable ASCII characters', { reason: 'invalid_idempotency_key' });
  }
  return key;
}

export class Idempotency {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    readonly options: IdempotencyOptions,
  ) {}

  /** Runs `work` once per (scope, key) and request; repeats get its stored answer (a stored error is thrown again). */
  async run(call: IdempotentCall, work: (attempt: Attempt) => Promise<Answer>): Promise<Answer & { replayed: boolean }> {
    const fingerprint = fingerprintOf(call);
    const deadline = Date.now() + this.options.waitMs;
    for (;;) {
      const claimed = await this.#claim(call, fingerprint);
      if (claimed.kind === 'owner') return { ...(await this.#work(call, claimed, work)), replayed: false };
      const row = claimed.row;
      if (row.fingerprint !== fingerprint) {
        throw new ApiError(409, 'idempotency_conflict', 'This Idempotency-Key was used with another request; use a new key for a new request', { reason: 'idempotency_conflict' });
      }
      if (row.status === 'done') return { ...replay(row.answerStatus!, row.answer as StoredAnswer), replayed: true };
      if (Date.now() >= deadline) {
        throw new ApiError(409, 'idempotency_in_progress', 'A request with this Idempotency-Key is still being processed; repeat it later for its answer', { reason: 'idempotency_in_progress' }, { 'retry-after': '1' });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Drops records past their retention; the worker calls it now and then. */
  async prune(): Promise<number> {
    const rows = await this.db
      .delete(idempotencyRecords)
      .where(lt(idempotencyRecords.expiresAt, databaseNow(this.clock)))
      .returning({ key: idempotencyRecords.key });
    return rows.length;
  }

  /**
   * Inserts the record (this call owns it), or takes over one whose retention ended or whose lease lapsed, or
   * reads the one there. Each is one conditional statement: two callers never both own a record.
   */
  async #claim(call: IdempotentCall, fingerprint: string): Promise<Claim> {
    const owner = randomUUID();
    const now = databaseNow(this.clock);
    const lease = sql`${now} + ${this.options.leaseSeconds} * interval '1 second'`;
    const expires = sql`${now} + ${this.options.retentionSeconds} * interval '1 second'`;
    const id = recordId(call.scope, call.key);
    const [inserted] = await this.db
      .insert(idempotencyRecords)
      .values({ scope: call.scope, key: call.key, id, operation: call.operation, fingerprint, status: 'running', owner, leaseExpiresAt: lease, expiresAt: expires })
      .onConflictDoNothing()
      .returning({ id: idempotencyRecords.id });
    if (inserted) return { kind: 'owner' as const, owner, id, resumed: false };
    const key = and(eq(idempotencyRecords.scope, call.scope), eq(idempotencyRecords.key, call.key));
    const fresh = { owner, leaseExpiresAt: lease, status: 'running' as const, answerStatus: null, answer: null, expiresAt: expires };
    // Past its retention: a new record (its old request and answer are forgotten).
    const [renewed] = await this.db
      .update(idempotencyRecords)
      .set({ ...fresh, fingerprint, operation: call.operation })
      .where(and(key, lt(idempotencyRecords.expiresAt, now)))
      .returning({ id: idempotencyRecords.id });
    if (renewed) return { kind: 'owner' as const, owner, id, resumed: false };
    // Its first call's node died (the lease lapsed by the database's clock): this repeat resumes it.
    const [taken] = await this.db
      .update(idempotencyRecords)
      .set(fresh)
      .where(and(key, eq(idempotencyRecords.status, 'running'), lt(idempotencyRecords.leaseExpiresAt, now), eq(idempotencyRecords.fingerprint, fingerprint)))
      .returning({ id: idempotencyRecords.id });
    if (taken) return { kind: 'owner' as const, owner, id, resumed: true };
    const [row] = await this.db.select().from(idempotencyRecords).where(key);
    if (!row) return this.#claim(call, fingerprint); // released meanwhile: try again
    return { kind: 'exists' as const, row };
  }

  async #work(call: IdempotentCall, claim: { owner: string; id: string; resumed: boolean }, work: (attempt: Attempt) => Promise<Answer>): Promise<Answer> {
    const mine = and(eq(idempotencyRecords.scope, call.scope), eq(idempotencyRecords.key, call.key), eq(idempotencyRecords.owner, claim.owner));
    // Every write names this call as the owner: once the answer is stored (owner cleared, maybe inside the
    // work's committed transaction) the later ones match nothing; a rolled-back one left the record ours.
    const store = async (db: Executor, status: number, answer: StoredAnswer) => {
      await db.update(idempotencyRecords).set({ status: 'done', answerStatus: status, answer, owner: null, leaseExpiresAt: null }).where(mine);
    };
    const attempt: Attempt = {
      id: claim.id,
      resumed: claim.resumed,
      finishIn: async (tx, answer) => {
        if (stored(answer.status)) await store(tx, answer.status, storedAnswer(answer));
      },
    };
    // Renewed while the work runs, so a slow call keeps its record; a dead node's lease lapses.
    const renewEvery = Math.max(1_000, (this.options.leaseSeconds * 1000) / 3);
    const renewal = setInterval(() => {
      const lease = sql`${databaseNow(this.clock)} + ${this.options.leaseSeconds} * interval '1 second'`;
      void this.db.update(idempotencyRecords).set({ leaseExpiresAt: lease }).where(mine).catch(() => undefined);
    }, renewEvery);
    renewal.unref();
    const release = () => this.db.delete(idempotencyRecords).where(mine);
    try {
      let answer: Answer;
      try {
        answer = await work(attempt);
      } catch (error) {
        if (error instanceof ApiError && stored(error.status)) {
          await store(this.db, error.status, { error: { code: error.code, message: error.message, ...(error.details === undefined ? {} : { details: error.details }) } });
        } else await release();
        throw error;
      }
      if (stored(answer.status)) await store(this.db, answer.status, storedAnswer(answer));
      else await release();
      return answer;
    } finally {
      clearInterval(renewal);
    }
  }
}

/** 402 (a challenge), 429 and 5xx say "nothing happened, try again": a repeat runs the work again. */
const stored = (status: number) => status !== 402 && status !== 429 && status < 500;

const storedAnswer = ({ body, headers }: Answer): StoredAnswer => (headers ? { body, headers } : { body });

function replay(status: number, answer: StoredAnswer): Answer {
  if ('error' in answer) throw new ApiError(status, answer.error.code, answer.error.message, answer.error.details, { 'idempotent-replayed': 'true' });
  return { status, body: answer.body, ...(answer.headers ? { headers: answer.headers } : {}) };
}

/** What a repeat must match: the operation and the request, hashed. */
export const fingerprintOf = (call: Pick<IdempotentCall, 'operation' | 'request'>): string =>
  createHash('sha256').update(canonicalJson({ operation: call.operation, request: call.request ?? null })).digest('hex');

/** A UUID-shaped id derived from (scope, key): the same wherever and however often the call runs. */
export function recordId(scope: string, key: string): string {
  const hex = createHash('sha256').update(`${scope}\n${key}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
