import { sql } from 'drizzle-orm';
import { check, index, integer, pgTable, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';
import { guardedJsonb } from '../../platform/db-types.js';

export const BROADCAST_STATUSES = ['in_flight', 'completed'] as const;
export type BroadcastStatus = (typeof BROADCAST_STATUSES)[number];

/**
 * Broadcast idempotency records: one per Idempotency-Key, bound to the credential it first came with
 * (its fingerprint), and one per authorization (payer, nonce), so no two keys can both get its success. `in_flight` while a request (the `owner`) settles it; `completed` with the answer
 * every repeat of the key gets. Kept until `expires_at` (retention), then pruned.
 */
export const relayBroadcasts = pgTable(
  'relay_broadcasts',
  {
    id: uuid('id').primaryKey(),
    idempotencyKey: text('idempotency_key').notNull().unique('relay_broadcasts_key_unique'),
    fingerprint: text('fingerprint').notNull(),
    payer: text('payer').notNull(),
    nonce: text('nonce').notNull(),
    status: text('status').$type<BroadcastStatus>().notNull(),
    /** Which request is settling it; a repeat that finds the owner gone takes over with a new one. */
    owner: uuid('owner').notNull(),
    httpStatus: integer('http_status'),
    answer: guardedJsonb('answer'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    // One record per authorization, whatever the key: a credential is relayed (and answered success) once.
    unique('relay_broadcasts_authorization_unique').on(t.payer, t.nonce),
    check('relay_broadcasts_status_check', sql`${t.status} in ('in_flight', 'completed')`),
    check('relay_broadcasts_completed_check', sql`(${t.status} = 'completed') = (${t.answer} is not null and ${t.httpStatus} is not null)`),
    index('relay_broadcasts_expiry_idx').on(t.expiresAt),
  ],
);
