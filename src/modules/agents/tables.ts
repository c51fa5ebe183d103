import { sql } from 'drizzle-orm';
import { check, index, integer, numeric, pgTable, primaryKey, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';

export const AGENT_TYPES = ['runtime_a', 'runtime_b'] as const;
export type AgentType = (typeof AGENT_TYPES)[number];

/** pending (bought, deployment queued or retrying) → running → expired (the month is over); failed: deployment gave up, refunded. */
export const AGENT_STATUSES = ['pending', 'running', 'expired', 'failed'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/**
 * Hosted agents. Created together with their purchase (credits) in one transaction; `pending` until the
 * worker deploys the runtime (`attempts`, `lastError` count its tries; `nextAttemptAt` spaces them).
 */
export const agents = pgTable(
  'agents',
  {
    id: uuid('id').primaryKey(),
    userId: text('user_id').notNull(),
    name: text('name').notNull(),
    type: text('type').$type<AgentType>().notNull(),
    spec: text('spec').notNull(),
    status: text('status').$type<AgentStatus>().notNull(),
    attempts: integer('attempts').notNull(),
    lastError: text('last_error'),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }),
    /** Model tokens (input + output) the runtime may use per UTC day, chats and any background calls alike. */
    dailyTokenBudget: integer('daily_token_budget').notNull().default(200_000),
    /** runtime_b: its own wallet (made at its first deployment) and the credential its payments are recorded under. */
    walletId: uuid('wallet_id'),
    walletCredentialId: uuid('wallet_credential_id'),
    /** runtime_b: what its tool may pay in all, and has paid or holds for a payment in flight (atomic units of the chain's asset). */
    paymentBudget: numeric('payment_budget', { precision: 78, scale: 0 }).notNull().default('0'),
    paymentSpent: numeric('payment_spent', { precision: 78, scale: 0 }).notNull().default('0'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    check('agents_type_check', sql`${t.type} in ('runtime_a', 'runtime_b')`),
    check('agents_status_check', sql`${t.status} in ('pending', 'running', 'expired', 'failed')`),
    check('agents_daily_token_budget_check', sql`${t.dailyTokenBudget} >= 0`),
    // The budget holds whatever the writer: a reservation that would pass it matches no row.
    check('agents_payment_budget_check', sql`${t.paymentSpent} >= 0 and ${t.paymentSpent} <= ${t.paymentBudget}`),
    index('agents_user_idx').on(t.userId, t.createdAt),
    // The deployer's queue: only agents waiting for a (re)try.
    index('agents_pending_idx').on(t.nextAttemptAt).where(sql`${t.status} = 'pending'`),
  ],
);

/**
 * The runtime of an agent (one per agent, kept across redeploys so its volume is adopted, never replaced).
 * `provider` says who hosts it; `volumeRef` and `machineRef` are that provider's handles; `url` and the token
 * are how the service reaches it, from whichever node serves the request.
 */
export const agentInstances = pgTable(
  'agent_instances',
  {
    id: uuid('id').primaryKey(),
    agentId: uuid('agent_id').notNull(),
    provider: text('provider').notNull(),
    appName: text('app_name').notNull(),
    url: text('url').notNull(),
    cpus: integer('cpus').notNull(),
    memoryMb: integer('memory_mb').notNull(),
    volumeSizeGb: integer('volume_size_gb').notNull(),
    volumeRef: text('volume_ref').notNull(),
    machineRef: text('machine_ref'),
    /** The bearer token the runtime accepts, sealed under the master key: any api node can reach the runtime. */
    sealedToken: text('sealed_token').notNull(),
    startedAt: timestamp('started_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    stoppedAt: timestamp('stopped_at', { withTimezone: true }),
    removedAt: timestamp('removed_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    unique('agent_instances_agent_unique').on(t.agentId),
    // The expiry sweep: running instances by when their month ends.
    index('agent_instances_expiry_idx').on(t.expiresAt).where(sql`${t.stoppedAt} is null`),
  ],
);

export const MODEL_PROVIDERS = ['openai', 'anthropic', 'openrouter'] as const;
export type ModelProvider = (typeof MODEL_PROVIDERS)[number];

/**
 * An agent's model-provider keys: sealed under the master key (the agent and provider bound as associated
 * data), listed only by their hint (start and end). One key per provider; setting it again replaces it.
 */
export const agentProviderKeys = pgTable(
  'agent_provider_keys',
  {
    agentId: uuid('agent_id').notNull(),
    provider: text('provider').$type<ModelProvider>().notNull(),
    sealedKey: text('sealed_key').notNull(),
    keyHint: text('key_hint').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.provider] }), check('agent_provider_keys_provider_check', sql`${t.provider} in ('openai', 'anthropic', 'openrouter')`)],
);
