import { bigserial, index, integer, jsonb, pgTable, primaryKey, smallint, text, timestamp, uuid } from 'drizzle-orm/pg-core';

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

/**
 * The answers of calls made with an Idempotency-Key (idempotency.ts): one row per (scope, key). `running`
 * while its first call works (the owner renews its lease); `done` with the answer every repeat replays.
 */
export const idempotencyRecords = pgTable(
  'idempotency_records',
  {
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    /** Stable for (scope, key): the id a route may give what the call creates, so a resumed call finds it. */
    id: uuid('id').notNull(),
    operation: text('operation').notNull(),
    fingerprint: text('fingerprint').notNull(),
    status: text('status', { enum: ['running', 'done'] }).notNull(),
    owner: text('owner'),
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true }),
    answerStatus: integer('answer_status'),
    answer: jsonb('answer'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] }), index('idempotency_records_expires_at').on(t.expiresAt)],
);

/**
 * The audit trail (audit.ts): one row per operator command and per credential or key change through the API.
 * Append-only: the service has no statement that updates or deletes a row, and the migration's triggers
 * refuse UPDATE, DELETE and TRUNCATE on the table to anyone, the service's own role included.
 */
export const auditLog = pgTable(
  'audit_log',
  {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    /** The database's clock at the insert. */
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
    /** `operator` (the CLI), or the credential kind of the API caller: identity, mgmt, project_key, wallet, oauth. */
    actorKind: text('actor_kind').notNull(),
    /** The user (identity subject), the credential's id, or the operator's login: never a secret. */
    actorId: text('actor_id').notNull(),
    /** What was done, e.g. `project-key.revoke`, `merchant.disable`. */
    action: text('action').notNull(),
    /** The id of what it was done to (a key, a merchant, a wallet…); null when there is none. */
    target: text('target'),
    /** The project it concerns, for its owner's view (GET /v1/projects/{projectId}/audit). */
    projectId: text('project_id'),
    requestId: text('request_id').notNull(),
    /** `api` or `cli`. */
    via: text('via').notNull(),
    /** `ok`, `refused` (the caller's mistake: 4xx, a refused command) or `error` (5xx, a failed command). */
    outcome: text('outcome').notNull(),
    /** The HTTP status answered (api). */
    status: smallint('status'),
    /** Small non-secret facts: the route, the error code, the command's scalar arguments. */
    detail: jsonb('detail'),
  },
  (t) => [index('audit_log_at').on(t.at), index('audit_log_target').on(t.target, t.seq), index('audit_log_project').on(t.projectId, t.seq)],
);

/**
 * Payees the service makes for itself on a devchain when none is configured (the /x402-test endpoints'): one per
 * name for the whole deployment, so every node of a cluster pays the same address. The key is sealed under the
 * master key (bound to the name), so payments to it can be spent in development.
 */
export const devReceivers = pgTable('dev_receivers', {
  name: text('name').primaryKey(),
  address: text('address').notNull(),
  sealedKey: text('sealed_key').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});
