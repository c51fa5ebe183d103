// Closing a PostgreSQL Database while statements wait for a pool connection: they fail, as statements sent
// after the close do, instead of waiting forever (pg-pool's end() leaves its queue unanswered, and with it
// whoever awaits them: a worker loop that a shutdown then waits on, for good).
import { sql } from 'drizzle-orm';
import { describe, expect, it, vi } from 'vitest';
import { openDatabase } from './db.js';

const serverUrl = process.env.DATABASE_URL;

describe.skipIf(!serverUrl)('closing the database (PostgreSQL)', () => {
  it('fails the statements queued for a connection, and the close itself ends', async () => {
    const database = await openDatabase({ url: serverUrl!, pgliteDir: null, poolSize: 1 });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holds!: () => void;
    const holdingNow = new Promise<void>((resolve) => (holds = resolve));
    // The pool's one connection, busy until released; the next statement queues behind it.
    const holding = database.db.transaction(async (tx) => {
      await tx.execute(sql`select 1`);
      holds();
      await held;
    });
    await holdingNow;
    const queued = database.query(sql`select 2 as two`).then(
      () => 'answered',
      (error: Error) => `failed: ${error.message}`,
    );
    // The connection is taken, and the pool may open no second one: the statement waits in its queue.
    await vi.waitFor(() => expect(database.pool().waiting).toBe(1));

    const closing = database.close();
    release();
    await holding;
    await closing;
    const outcome = await Promise.race([queued, new Promise((resolve) => setTimeout(() => resolve('still waiting'), 2_000))]);
    expect(outcome).toMatch(/^failed: /);
    await expect(database.query(sql`select 3`)).rejects.toThrow();
  });
});
