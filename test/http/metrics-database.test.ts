// The database's series on a real database (PGlite, or PostgreSQL with DATABASE_URL): each statement's
// latency by kind, counted exactly whichever way it ran (query builder, raw SQL, a named prepared statement,
// inside a transaction), and the pool's gauges while every connection is held and a query waits.
import { sql } from 'drizzle-orm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../../src/platform/metrics.js';
import { rowsOf } from '../../src/platform/sql-rows.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';

let testDatabase: TestDatabase;
let metrics: Metrics;
beforeEach(async () => {
  testDatabase = await openTestDatabase();
  // After the migrations: from here on every statement is this test's.
  metrics = createMetrics(testDatabase.database);
});
afterEach(async () => testDatabase?.close());

/** `name{labels} value` samples of the process registry's text, by their label text. */
async function samples(name: string): Promise<Record<string, number>> {
  const text = await metrics.registry.metrics();
  const found: Record<string, number> = {};
  for (const match of text.matchAll(new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`, 'gm'))) found[match[1] ?? ''] = Number(match[2]);
  return found;
}
const queryCounts = async () => {
  const counts = await samples('tollgate_db_query_duration_seconds_count');
  return Object.fromEntries(Object.entries(counts).map(([labels, value]) => [labels.replace(/^\{operation="(.+)"\}$/, '$1'), value]));
};
const pool = async () => {
  const read = async (name: string) => (await samples(`tollgate_db_pool_${name}`))[''];
  return { max: await read('max_connections'), total: await read('connections'), idle: await read('idle_connections'), waiting: await read('waiting_queries') };
};

describe('query latency', () => {
  it('counts every statement once, by kind, through every path a store uses', async () => {
    const { database } = testDatabase;
    const { db } = database;
    await database.query(sql`create table metrics_probe (id int primary key, n int not null)`);
    await db.execute(sql`insert into metrics_probe values (1, 0), (2, 0)`);
    await rowsOf(db, sql`select n from metrics_probe where id = ${1}`); // a named prepared statement on PostgreSQL
    await db.transaction(async (tx) => {
      await tx.execute(sql`update metrics_probe set n = n + 1 where id = 1`);
      await tx.execute(sql`select n from metrics_probe where id = 1`);
    });
    await db.execute(sql`  (select 1)`);
    await db.execute(sql`with gone as (delete from metrics_probe where id = 2 returning id) select count(*) from gone`);
    await db.execute(sql`DELETE FROM metrics_probe WHERE id = 1`);
    await expect(db.execute(sql`select * from no_such_table`)).rejects.toThrow();

    // PostgreSQL runs begin and commit as statements; PGlite runs them inside its own transaction call.
    const transaction = database.kind === 'postgres' ? { transaction: 2 } : {};
    expect(await queryCounts()).toEqual({ other: 2, insert: 1, select: 4, update: 1, delete: 1, ...transaction });
    const sums = await samples('tollgate_db_query_duration_seconds_sum');
    expect(sums['{operation="select"}']).toBeGreaterThan(0);
    expect(sums['{operation="select"}']).toBeLessThan(30);
  });
});

describe('pool gauges', () => {
  it('show every connection busy and the queries waiting for one, then idle again', async () => {
    const { database } = testDatabase;
    const size = database.kind === 'postgres' ? 10 : 1; // openTestDatabase's pool; PGlite's one connection
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const started: Array<Promise<void>> = [];
    const held = Array.from({ length: size }, () => {
      let begun!: () => void;
      started.push(new Promise<void>((resolve) => (begun = resolve)));
      return database.db.transaction(async (tx) => {
        await tx.execute(sql`select 1`);
        begun();
        await gate;
      });
    });
    await Promise.all(started);
    const waiting = [database.query(sql`select 2`), database.query(sql`select 3`)];
    try {
      await expect.poll(pool).toEqual({ max: size, total: size, idle: 0, waiting: 2 });
    } finally {
      open(); // a failed check must not leave the connections held
      await Promise.all([...held, ...waiting]);
    }
    expect(await pool()).toEqual({ max: size, total: size, idle: size, waiting: 0 });
  });
});
