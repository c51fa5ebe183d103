import { createHash } from 'node:crypto';
import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import pg from 'pg';
import type { Executor } from './db.js';
import { parseTimestamptz } from './pg-timestamp.js';

// Raw-SQL plumbing for stores whose hot paths are single hand-written statements (events, trading ticks):
// rows come back as the driver gives them (timestamps as Dates or text, inside JSON as text; counts as text
// on node-postgres).

export type Timestamp = Date | string;

/**
 * Parses a timestamptz as the drivers return it ('2026-03-08 13:00:00.123+00', or inside JSON
 * '2026-03-08T13:00:00.123+00:00') or passes a Date through.
 */
export function toDate(value: Timestamp): Date;
export function toDate(value: Timestamp | null): Date | null;
export function toDate(value: Timestamp | null): Date | null {
  if (value === null || value instanceof Date) return value;
  return parseTimestamptz(value, viaDateParse);
}

const viaDateParse = (value: string) => new Date(value.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'));

const dialect = new PgDialect();
const statementNames = new Map<string, string>();

/**
 * Runs a statement and returns its rows. On node-postgres, outside transactions, it runs as a named
 * prepared statement: PostgreSQL plans each text once per connection instead of on every call
 * (planning costs more than running these short queue statements). Named by a hash of its text.
 */
export async function rowsOf<T>(executor: Executor, statement: SQL): Promise<T[]> {
  const pool = (executor as { $client?: unknown }).$client;
  if (pool instanceof pg.Pool) {
    const query = dialect.sqlToQuery(statement);
    let name = statementNames.get(query.sql);
    if (!name) {
      name = `tollgate_${createHash('sha256').update(query.sql).digest('hex').slice(0, 24)}`;
      statementNames.set(query.sql, name);
    }
    return (await pool.query({ name, text: query.sql, values: query.params as unknown[] })).rows as T[];
  }
  const result = await executor.execute(statement);
  return (result as unknown as { rows: T[] }).rows;
}


