import { sql } from 'drizzle-orm';
import { check, index, integer, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

export const AGENT_TYPES = ['runtime_a', 'runtime_b'] as const;
export type AgentType = (typeof AGENT_TYPES)[number];

/**
 * Hosted agents. Created together with their purchase (credits) in one transaction; `pending` until the
 * worker deploys the runtime (`attempts`, `lastError` count its tries).
 */
export const agents = pgTable(
  'agents',
  {
    id: uuid('id').primaryKey(),
    userId: text('user_id').notNull(),
    name: text('name').notNull(),
    type: text('type').$type<AgentType>().notNull(),
    spec: text('spec').notNull(),
    status: text('status').notNull(),
    attempts: integer('attempts').notNull(),
    lastError: text('last_error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    check('agents_type_check', sql`${t.type} in ('runtime_a', 'runtime_b')`),
    index('agents_user_idx').on(t.userId, t.createdAt),
  ],
);
