import { sql } from 'drizzle-orm';
import { check, index, integer, pgTable, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';
import { guardedJsonb } from '../../platform/db-types.js';

export const BROADCAST_STATUSES = ['in_flight', 'completed'] as const;
export type BroadcastStatus = (typeof BROADCAST_STATUSES)[number];

/**
 * Broadcast idempotency records: one per payer and Idempotency-Key (a key names a record only within the
 * payer whose signed credential created it, so nobody else can hold or read it), bound to the credential it
 * first came with (its fingerprint), and one per authorization (payer, nonce), so no two keys can both get
 * its success. `in_flight` while a request (the `owner`) settles it; `completed` with the answer every
 * repeat of the key gets. Kept until `expires_at` (retention), then pruned.
 */
export const relayBroadcasts = pgTable(
  'relay_broadcasts',
  {
    id: uuid('id').primaryKey(),
    idempotencyKey: text('idempotency_key').notNull(),
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
    // The payer's keys: the same key from two payers is two records.
    unique('relay_broadcasts_payer_key_unique').on(t.payer, t.idempotencyKey),
    // One record per authorization, whatever the key: a credential is relayed (and answered success) once.
    unique('relay_broadcasts_authorization_unique').on(t.payer, t.nonce),
    check('relay_broadcasts_status_check', sql`${t.status} in ('in_flight', 'completed')`),
    check('relay_broadcasts_completed_check', sql`(${t.status} = 'completed') = (${t.answer} is not null and ${t.httpStatus} is not null)`),
    index('relay_broadcasts_expiry_idx').on(t.expiresAt),
    // A payer's live records, counted against its capacity (an index-only scan, stopped at the cap).
    index('relay_broadcasts_payer_expiry_idx').on(t.payer, t.expiresAt),
  ],
);
