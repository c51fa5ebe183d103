import { sql } from 'drizzle-orm';
import { MODEL_PROVIDERS, type ModelProvider } from '../../platform/model-providers.js';

export { MODEL_PROVIDERS, type ModelProvider };

/** The bot's settings (bounds in schemas.ts): a system prompt put before every session, and the sampling. */
export interface BotSettings {
  systemPrompt?: string;
  temperature?: number;
  maxOutputTokens?: number;
}
import { bigint, check, date, index, integer, jsonb, numeric, pgTable, primaryKey, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';

export const AGENT_TYPES = ['runtime_a', 'runtime_b'] as const;
export type AgentType = (typeof AGENT_TYPES)[number];

/**
 * pending (bought or started, deployment queued or retrying) → running ⇄ stopped (by its user, inside the paid
 * month) → expired (the month is over); failed: the first deployment gave up, refunded; volume_lost: the
 * runtime's volume is gone, so it is not started on an empty one; deleted: by its user, gone from lists.
 */
export const AGENT_STATUSES = ['pending', 'running', 'stopped', 'expired', 'failed', 'volume_lost', 'deleted'] as const;
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
    /** The model each provider uses ({ openai?, anthropic?, openrouter? }) and the bot's settings; null: the defaults. */
    models: jsonb('models').$type<Partial<Record<ModelProvider, string>>>(),
    botSettings: jsonb('bot_settings').$type<BotSettings>(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    check('agents_type_check', sql`${t.type} in ('runtime_a', 'runtime_b')`),
    check('agents_status_check', sql`${t.status} in ('pending', 'running', 'stopped', 'expired', 'failed', 'volume_lost', 'deleted')`),
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
    /** When a stopped instance's volume (and with it the agent's data) is removed; null while it runs. */
    removeAt: timestamp('remove_at', { withTimezone: true }),
    /** When the provider confirmed a stopped instance's runtime halted (the supervisor halts it otherwise). */
    haltedAt: timestamp('halted_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    unique('agent_instances_agent_unique').on(t.agentId),
    // The supervisor's work: stopped runtimes not yet halted, and volumes due for removal.
    index('agent_instances_halt_idx').on(t.stoppedAt).where(sql`${t.stoppedAt} is not null and ${t.haltedAt} is null`),
    index('agent_instances_removal_idx').on(t.removeAt).where(sql`${t.removedAt} is null`),
    // The expiry sweep: running instances by when their month ends.
    index('agent_instances_expiry_idx').on(t.expiresAt).where(sql`${t.stoppedAt} is null`),
  ],
);


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

/**
 * Chat histories, kept by the service (not on the runtime's volume): any api node reads them, they survive a
 * runtime that dies, and they can be exported while the runtime is stopped. One row per transcript entry in
 * the runtime's neutral form (`{ role, content, toolCalls? }` or `{ role: "tool", toolCallId, name, content }`),
 * so a runtime_b agent sees the tool calls it made and what they paid; `seq` orders a session.
 */
export const agentChatEntries = pgTable(
  'agent_chat_entries',
  {
    agentId: uuid('agent_id').notNull(),
    session: text('session').notNull(),
    seq: integer('seq').notNull(),
    entry: jsonb('entry').$type<Record<string, unknown>>().notNull(),
    /** The turn that added it (its user's messages at its start, the rest when it completed); null before turns were recorded. */
    turnId: uuid('turn_id'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.session, t.seq] })],
);

export const TURN_STATUSES = ['running', 'completed', 'failed'] as const;
export type TurnStatus = (typeof TURN_STATUSES)[number];

/**
 * Chat turns, stored with the user's messages before the model is called: `running` while a node waits on the
 * runtime (it renews `heartbeatAt`, the database's clock, every few seconds), then `completed` with what the
 * turn added, or `failed` with why (the provider, the budget, a shutdown, or — its heartbeat gone stale — the
 * node that ran it died). Each move names `running`, so a turn ends once.
 */
export const agentTurns = pgTable(
  'agent_turns',
  {
    id: uuid('id').primaryKey(),
    agentId: uuid('agent_id').notNull(),
    session: text('session').notNull(),
    status: text('status').$type<TurnStatus>().notNull(),
    error: text('error'),
    /** The chat request's id (its X-Request-Id when the client sent one): its tool payments carry it too. */
    requestId: text('request_id'),
    /** Model tokens the turn used, as the runtime reported them; null when it did not answer. */
    tokens: integer('tokens'),
    heartbeatAt: timestamp('heartbeat_at', { withTimezone: true }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
  },
  (t) => [
    check('agent_turns_status_check', sql`${t.status} in ('running', 'completed', 'failed')`),
    index('agent_turns_session_idx').on(t.agentId, t.session, t.createdAt),
    // The stale-turn sweep: running turns by heartbeat.
    index('agent_turns_running_idx').on(t.heartbeatAt).where(sql`${t.status} = 'running'`),
  ],
);

/** Model tokens (input + output) an agent's chats used per UTC day, as its runtime reported them. */
export const agentTokenUsage = pgTable(
  'agent_token_usage',
  {
    agentId: uuid('agent_id').notNull(),
    day: date('day').notNull(),
    tokens: bigint('tokens', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.day] })],
);

export type HoldStatus = 'held' | 'spent' | 'released';

/**
 * runtime_b's budget holds: one per tool payment, its id the wallet payment's id (given before signing). A
 * hold is `held` while the payment may still move money, then `spent` (what it paid) or `released` (nothing
 * was signed, or the payment failed), each move once, with the agent's paymentSpent in the same transaction.
 */
export const agentPaymentHolds = pgTable(
  'agent_payment_holds',
  {
    id: uuid('id').primaryKey(),
    agentId: uuid('agent_id').notNull(),
    walletId: uuid('wallet_id').notNull(),
    amount: numeric('amount', { precision: 78, scale: 0 }).notNull(),
    status: text('status').$type<HoldStatus>().notNull(),
    paid: numeric('paid', { precision: 78, scale: 0 }),
    /** The chat turn whose tool call paid (null: a call without one, from a runtime older than turns). */
    turnId: uuid('turn_id'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    check('agent_payment_holds_status_check', sql`${t.status} in ('held', 'spent', 'released')`),
    index('agent_payment_holds_open_idx').on(t.id).where(sql`${t.status} = 'held'`),
    index('agent_payment_holds_agent_idx').on(t.agentId, t.status),
    index('agent_payment_holds_turn_idx').on(t.turnId),
  ],
);

/**
 * Withdrawals sent with an Idempotency-Key: the key names the wallet payment before anything is signed, so the
 * same key again answers that transfer and never makes a second one (the payment's id is unique).
 */
export const agentWithdrawals = pgTable(
  'agent_withdrawals',
  {
    agentId: uuid('agent_id').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    paymentId: uuid('payment_id').notNull(),
    to: text('to').notNull(),
    amount: numeric('amount', { precision: 78, scale: 0 }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.idempotencyKey] })],
);

/**
 * An agent's chat for sale (issue 47): its owner's price in atomic units of the chain's asset per 1,000 model tokens,
 * the most tokens one paid turn may use (the `upto` maximum is their price), and where the payments go.
 */
export const agentChatPrices = pgTable(
  'agent_chat_prices',
  {
    agentId: uuid('agent_id').primaryKey(),
    pricePer1kTokens: numeric('price_per_1k_tokens', { precision: 78, scale: 0 }).notNull(),
    maxTokensPerTurn: integer('max_tokens_per_turn').notNull(),
    payTo: text('pay_to').notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [check('agent_chat_prices_price_check', sql`${t.pricePer1kTokens} > 0 and ${t.maxTokensPerTurn} > 0`)],
);

export type PaidTurnStatus = 'running' | 'completed' | 'failed';

/**
 * One paid chat turn per `upto` permit, keyed as x402_paid_requests keys the payment (network, asset, payer, Permit2
 * nonce): inserted before the turn begins, so a permit runs one turn whatever the races, with the price it was signed
 * at. Its end (the answer or the error, the tokens and the amount to settle) is written in the transaction that
 * completes the chat turn, so a settle retried after a crash asks exactly that amount and answers that answer.
 */
export const agentPaidTurns = pgTable(
  'agent_paid_turns',
  {
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    payer: text('payer').notNull(),
    nonce: text('nonce').notNull(),
    agentId: uuid('agent_id').notNull(),
    turnId: uuid('turn_id').notNull(),
    pricePer1kTokens: numeric('price_per_1k_tokens', { precision: 78, scale: 0 }).notNull(),
    maxTokens: integer('max_tokens').notNull(),
    maximum: numeric('maximum', { precision: 78, scale: 0 }).notNull(),
    payTo: text('pay_to').notNull(),
    status: text('status').$type<PaidTurnStatus>().notNull(),
    tokens: integer('tokens'),
    amount: numeric('amount', { precision: 78, scale: 0 }),
    /** completed: the chat answer ({ message, raw, text }); failed: the error ({ status, code, message, details }). */
    answer: jsonb('answer'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.network, t.asset, t.payer, t.nonce] }),
    check('agent_paid_turns_status_check', sql`${t.status} in ('running', 'completed', 'failed')`),
    check('agent_paid_turns_amount_check', sql`${t.amount} is null or (${t.amount} >= 0 and ${t.amount} <= ${t.maximum})`),
    index('agent_paid_turns_agent_idx').on(t.agentId, t.createdAt),
    // The tool's pay route refuses a paid turn's payments: looked up by the turn.
    index('agent_paid_turns_turn_idx').on(t.turnId),
  ],
);
