import { boolean, index, pgTable, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';

export const projects = pgTable(
  'projects',
  {
    id: uuid('id').primaryKey(),
    ownerUserId: text('owner_user_id').notNull(),
    name: text('name').notNull(),
    /** `active` or `disabled` (an operator action); a disabled project's keys answer 403. */
    status: text('status').notNull().default('active'),
    /**
     * The project's event queue that receives its payment-intent events (docs/intents.md#intent-events), or
     * null. An id of the events module's queues, without a foreign key (a module owns its tables): a deleted
     * queue simply receives nothing.
     */
    intentEventsQueueId: uuid('intent_events_queue_id'),
    /**
     * The Tollgate wallet that pays the project's refunds (docs/intents.md#refunds), and the wallet credential the
     * owner proved the right to it with (refunds are that credential's payments; revoking it stops them). Ids of
     * the wallets module's rows, without foreign keys.
     */
    refundWalletId: uuid('refund_wallet_id'),
    refundWalletCredentialId: uuid('refund_wallet_credential_id'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('projects_owner_idx').on(t.ownerUserId, t.createdAt)],
);

export const projectApiKeys = pgTable(
  'project_api_keys',
  {
    id: uuid('id').primaryKey(),
    projectId: uuid('project_id').notNull().references(() => projects.id),
    name: text('name').notNull(),
    prefix: text('prefix').notNull(),
    secretHash: text('secret_hash').notNull().unique(),
    /** `active`, `disabled` (403) or `revoked` (401). */
    status: text('status').notNull().default('active'),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('project_api_keys_project_idx').on(t.projectId)],
);

export const merchants = pgTable(
  'merchants',
  {
    id: uuid('id').primaryKey(),
    projectId: uuid('project_id').notNull().references(() => projects.id),
    name: text('name').notNull(),
    enabled: boolean('enabled').notNull().default(true),
    payTo: text('pay_to').notNull(),
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  // pay_to: the public facilitator's payTo policy looks merchants up by it. A name is unique within its
  // project (exact text; migration 0023 renamed earlier duplicates "name (2)", "name (3)", ...).
  (t) => [
    index('merchants_project_idx').on(t.projectId),
    index('merchants_pay_to_idx').on(t.payTo),
    unique('merchants_project_name_unique').on(t.projectId, t.name),
  ],
);
