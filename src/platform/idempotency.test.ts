import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase, type TestDatabase } from '../../test/helpers/database.js';
import { systemClock } from './clock.js';
import { ApiError } from './http/errors.js';
import { fingerprintOf, Idempotency, recordId, type IdempotentCall } from './idempotency.js';

let testDb: TestDatabase;
let idempotency: Idempotency;
beforeAll(async () => {
  testDb = await openTestDatabase();
  idempotency = new Idempotency(testDb.database.db, systemClock, { retentionSeconds: 3600, waitMs: 1_500, leaseSeconds: 30 });
});
afterAll(async () => testDb?.close());

let n = 0;
const callOf = (request: unknown = { amount: 1 }): IdempotentCall => ({ scope: 'user:alice', key: `key-${++n}-${Date.now()}`, operation: 'test.buy', request });
const counted = () => {
  let runs = 0;
  return { work: async () => ({ status: 201, body: { run: ++runs } }), runs: () => runs };
};

describe('Idempotency', () => {
  it('runs the work once; a repeat gets the stored answer, marked replayed', async () => {
    const call = callOf();
    const { work, runs } = counted();
    expect(await idempotency.run(call, work)).toEqual({ status: 201, body: { run: 1 }, replayed: false });
    expect(await idempotency.run(call, work)).toEqual({ status: 201, body: { run: 1 }, replayed: true });
    expect(runs()).toBe(1);
  });

  it('the same key with another request, or for another operation, is 409 idempotency_conflict; another scope is another record', async () => {
    const call = callOf({ amount: 1 });
    const { work, runs } = counted();
    await idempotency.run(call, work);
    await expect(idempotency.run({ ...call, request: { amount: 2 } }, work)).rejects.toMatchObject({ status: 409, code: 'idempotency_conflict' });
    await expect(idempotency.run({ ...call, operation: 'test.other' }, work)).rejects.toMatchObject({ status: 409, code: 'idempotency_conflict' });
    expect((await idempotency.run({ ...call, scope: 'user:bob' }, work)).body).toEqual({ run: 2 });
    expect(runs()).toBe(2);
  });

  it('concurrent copies: one runs, the others wait for its answer', async () => {
    const call = callOf();
    let runs = 0;
    const work = async () => {
      runs += 1;
      await new Promise((resolve) => setTimeout(resolve, 300));
      return { status: 200, body: { ok: true } };
    };
    const answers = await Promise.all(Array.from({ length: 5 }, () => idempotency.run(call, work)));
    expect(runs).toBe(1);
    expect(answers.map((a) => a.body)).toEqual(Array(5).fill({ ok: true }));
    expect(answers.filter((a) => !a.replayed)).toHaveLength(1);
  });

  it('a repeat that outwaits a first call still running gets 409 idempotency_in_progress', async () => {
    const call = callOf();
    let release!: () => void;
    const first = idempotency.run(call, () => new Promise((resolve) => (release = () => resolve({ status: 200, body: 'late' }))));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await expect(idempotency.run(call, async () => ({ status: 200, body: 'second' }))).rejects.toMatchObject({ status: 409, code: 'idempotency_in_progress' });
    release();
    expect((await first).body).toBe('late');
    expect((await idempotency.run(call, async () => ({ status: 200, body: 'third' }))).body).toBe('late');
  });

  it('a 4xx ApiError is stored and thrown again; 402, 429, 5xx and other throws release the key', async () => {
    const call = callOf();
    await expect(idempotency.run(call, async () => Promise.reject(new ApiError(409, 'wallet_not_active', 'no', { status: 'x' })))).rejects.toMatchObject({ status: 409 });
    await expect(idempotency.run(call, async () => ({ status: 200, body: 'never' }))).rejects.toMatchObject({ status: 409, code: 'wallet_not_active', message: 'no', details: { status: 'x' } });

    for (const released of [async () => ({ status: 402, body: 'pay' }), async () => ({ status: 503, body: 'later' }), async () => Promise.reject(new ApiError(429, 'rate_limited', 'slow')), async () => Promise.reject(new Error('boom'))]) {
      const again = callOf();
      await idempotency.run(again, released).catch(() => undefined);
      expect((await idempotency.run(again, async () => ({ status: 200, body: 'ran' }))).body).toBe('ran');
    }
  });

  it('replays the headers that are part of the answer', async () => {
    const call = callOf();
    await idempotency.run(call, async () => ({ status: 200, body: 'paid', headers: { 'payment-response': 'abc' } }));
    expect(await idempotency.run(call, async () => ({ status: 200, body: 'x' }))).toEqual({ status: 200, body: 'paid', headers: { 'payment-response': 'abc' }, replayed: true });
  });

  it("finishIn stores the answer in the work's transaction: rolled back, no answer; committed, the answer", async () => {
    const db = testDb.database.db;
    const call = callOf();
    await expect(
      idempotency.run(call, (attempt) =>
        db.transaction(async (tx) => {
          await attempt.finishIn(tx, { status: 201, body: 'bought' });
          throw new Error('rolled back after the answer was written');
        }),
      ),
    ).rejects.toThrow('rolled back');
    // The throw released the record: the answer written in the rolled-back transaction is gone with it.
    expect((await idempotency.run(call, (attempt) => db.transaction(async (tx) => {
      await attempt.finishIn(tx, { status: 201, body: 'bought once' });
      return { status: 201, body: 'bought once' };
    }))).body).toBe('bought once');
    expect((await idempotency.run(call, async () => ({ status: 201, body: 'twice' }))).body).toBe('bought once');
  });

  it("a record whose first call's node died (its lease lapsed) is taken over: the work runs again, resumed, with the same id", async () => {
    const call = callOf();
    const id = recordId(call.scope, call.key);
    await testDb.database.db.execute(sql`
      insert into idempotency_records (scope, key, id, operation, fingerprint, status, owner, lease_expires_at, expires_at)
      values (${call.scope}, ${call.key}, ${id}, ${call.operation}, ${fingerprintOf(call)}, 'running', 'dead-node', now() - interval '1 second', now() + interval '1 hour')`);
    let seen: { id: string; resumed: boolean } | undefined;
    const answer = await idempotency.run(call, async (attempt) => {
      seen = { id: attempt.id, resumed: attempt.resumed };
      return { status: 200, body: 'resumed' };
    });
    expect(answer).toMatchObject({ body: 'resumed', replayed: false });
    expect(seen).toEqual({ id, resumed: true });
    // A lapsed lease with another request under the key is still a conflict, not a takeover.
    const other = callOf();
    await testDb.database.db.execute(sql`
      insert into idempotency_records (scope, key, id, operation, fingerprint, status, owner, lease_expires_at, expires_at)
      values (${other.scope}, ${other.key}, ${recordId(other.scope, other.key)}, ${other.operation}, 'another request', 'running', 'dead-node', now() - interval '1 second', now() + interval '1 hour')`);
    await expect(idempotency.run(other, async () => ({ status: 200, body: 'x' }))).rejects.toMatchObject({ code: 'idempotency_conflict' });
  });

  it('a record past its retention is forgotten: the key is new again, and prune deletes it', async () => {
    const call = callOf();
    await idempotency.run(call, async () => ({ status: 200, body: 'old' }));
    await testDb.database.db.execute(sql`update idempotency_records set expires_at = now() - interval '1 second' where key = ${call.key}`);
    expect((await idempotency.run({ ...call, request: { amount: 99 } }, async () => ({ status: 200, body: 'new' }))).body).toBe('new');
    await testDb.database.db.execute(sql`update idempotency_records set expires_at = now() - interval '1 second' where key = ${call.key}`);
    expect(await idempotency.prune()).toBeGreaterThanOrEqual(1);
  });
});
