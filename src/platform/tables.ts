import { integer, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

// Platform-owned tables: shared primitives that belong to no single module.

/** Fixed-window counters of the PostgreSQL rate limiter; one row per key. */
export const rateLimitCounters = pgTable('rate_limit_counters', {
  key: text('key').primaryKey(),
  windowStart: timestamp('window_start', { withTimezone: true }).notNull(),
  count: integer('count').notNull(),
});

/**
 * Wallet management credentials. Each one is an "application": it sees only the wallets it created.
 * Provisioned out of band by the operator (`tollgate mgmt-credential create`).
 */
export const mgmtCredentials = pgTable('mgmt_credentials', {
  id: uuid('id').primaryKey(),
  name: text('name').notNull(),
  prefix: text('prefix').notNull(),
  secretHash: text('secret_hash').notNull().unique(),
  status: text('status').notNull().default('active'),
  lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  revokedAt: timestamp('revoked_at', { withTimezone: true }),
});
