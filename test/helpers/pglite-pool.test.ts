// The PGlite pool hands a test file a database as empty as a fresh one, and nothing of the file before it.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { migratedPglite as migrated } from './database.js';
import { leasePglite } from './pglite-pool.js';

const audit = (target: string) =>
  sql`insert into audit_log (actor_kind, actor_id, action, target, request_id, via, outcome) values ('operator', 'test', 'pool.test', ${target}, 'req', 'cli', 'ok') returning seq`;
// drizzle wraps the driver's error, as it wraps a closed PGlite's.
const closed = { cause: expect.objectContaining({ message: 'PGlite is closed' }) };
const count = async (database: Awaited<ReturnType<typeof leasePglite>>['database'], table: string) =>
  (await database.query<{ n: number }>(sql.raw(`select count(*)::int as n from ${table}`)))[0]!.n;

// The PostgreSQL pass copies a template database per file instead.
describe.skipIf(process.env.DATABASE_URL)('the PGlite pool', () => {
  it('hands the next lease the same instance with no rows and its sequences restarted', async () => {
    const first = await leasePglite(migrated);
    await first.database.query(audit('one'));
    await first.database.query(audit('two'));
    await first.release();

    const second = await leasePglite(migrated);
    try {
      expect(second.reused).toBe(true);
      expect(await count(second.database, 'audit_log')).toBe(0);
      const [row] = await second.database.query<{ seq: number }>(audit('three'));
      expect(Number(row!.seq)).toBe(1);
    } finally {
      await second.release();
    }
  });

  it("refuses a closed lease's calls, so a straggler cannot write into the next lease's database", async () => {
    const first = await leasePglite(migrated);
    await first.release();
    const second = await leasePglite(migrated);
    try {
      expect(second.reused).toBe(true);
      await expect(first.database.query(audit('straggler'))).rejects.toMatchObject(closed);
      await expect(first.database.db.execute(sql`select 1`)).rejects.toMatchObject(closed);
      expect(await count(second.database, 'audit_log')).toBe(0);
    } finally {
      await second.release();
    }
  });

  it("closing the lease's Database refuses its calls, as a closed PGlite does, and the pool still takes it back", async () => {
    const lease = await leasePglite(migrated);
    await lease.database.close();
    await expect(lease.database.query(sql`select 1`)).rejects.toMatchObject(closed);
    await lease.release();
    const next = await leasePglite(migrated);
    expect(next.reused).toBe(true);
    expect(await next.database.query(sql`select 1 as one`)).toEqual([{ one: 1 }]);
    await next.release();
  });

  it('does not hand on an instance whose schema a test changed', async () => {
    const lease = await leasePglite(migrated);
    await lease.database.query(sql`create table pool_test_leftover (id int)`);
    await lease.release();
    const next = await leasePglite(migrated);
    try {
      expect(next.reused).toBe(false);
      expect(await next.database.query(sql`select to_regclass('pool_test_leftover') as found`)).toEqual([{ found: null }]);
    } finally {
      await next.release();
    }
  });

  it("clears a lease's listeners: the next lease's listener on the same channel hears, the old one does not", async () => {
    const first = await leasePglite(migrated);
    const heardByFirst: string[] = [];
    await first.database.listen('pool_test', (payload) => heardByFirst.push(payload));
    await first.release();

    const second = await leasePglite(migrated);
    try {
      expect(second.reused).toBe(true);
      const heardBySecond: string[] = [];
      await second.database.listen('pool_test', (payload) => heardBySecond.push(payload));
      await second.database.notify('pool_test', 'hello');
      await expect.poll(() => heardBySecond).toEqual(['hello']);
      expect(heardByFirst).toEqual([]);
    } finally {
      await second.release();
    }
  });
});
