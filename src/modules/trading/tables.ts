import { sql } from 'drizzle-orm';
import { boolean, check, doublePrecision, index, integer, numeric, pgTable, primaryKey, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';
import { guardedJsonb } from '../../platform/db-types.js';
import type { ModelProvider } from '../../platform/model-providers.js';

// Tables of agentic trading. User ids are the identity's subject; wallet ids and event schedule ids are
// other modules' ids, kept without foreign keys (a module owns its tables).

export const VISIBILITIES = ['private', 'public'] as const;
export type Visibility = (typeof VISIBILITIES)[number];

/** A strategy: a name and who may launch it; what it does lives in its immutable versions. */
export const tradingStrategies = pgTable(
  'trading_strategies',
  {
    id: uuid('id').primaryKey(),
    userId: text('user_id').notNull(),
    name: text('name').notNull(),
    /** What every reader is told about it; the definition of a priced one is its owner's alone (docs/trading.md). */
    description: text('description'),
    visibility: text('visibility').$type<Visibility>().notNull(),
    latestVersion: integer('latest_version').notNull(),
    /** What launching it from another user's account costs in USD (x402, once per account; docs/trading.md#payment-metering); null: free. */
    accessPriceUsd: text('access_price_usd'),
    accessPayTo: text('access_pay_to'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [check('trading_strategies_visibility_check', sql`${t.visibility} in ('private', 'public')`), index('trading_strategies_user_idx').on(t.userId, t.id)],
);

/** Versions are written once and never updated: a runtime keeps the version (and hash) it was launched with. */
export const tradingStrategyVersions = pgTable(
  'trading_strategy_versions',
  {
    id: uuid('id').primaryKey(),
    strategyId: uuid('strategy_id')
      .notNull()
      .references(() => tradingStrategies.id),
    number: integer('number').notNull(),
    kind: text('kind').notNull(),
    schemaVersion: integer('schema_version').notNull(),
    definition: guardedJsonb('definition').notNull(),
    /** sha256 of the canonical JSON of kind, schemaVersion and definition. */
    contentHash: text('content_hash').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  // Two publishers racing for the same number: one insert wins, the other retries with the next.
  (t) => [unique('trading_strategy_versions_number_unique').on(t.strategyId, t.number)],
);

export const KILL_SWITCH_MODES = ['off', 'halt', 'reduce_only'] as const;
export type KillSwitchMode = (typeof KILL_SWITCH_MODES)[number];

/** Trading accounts: an agent wallet made through the Wallet API's provider, and the account-wide kill switch. */
export const tradingAccounts = pgTable(
  'trading_accounts',
  {
    id: uuid('id').primaryKey(),
    userId: text('user_id').notNull(),
    name: text('name').notNull(),
    type: text('type').notNull(),
    walletId: uuid('wallet_id').notNull(),
    killSwitch: text('kill_switch').$type<KillSwitchMode>().notNull().default('off'),
    /** Gross exposure in USD all the account's runtimes may hold together; null: no account-wide limit (engine.ts). */
    maxExposureUsd: doublePrecision('max_exposure_usd'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    check('trading_accounts_kill_switch_check', sql`${t.killSwitch} in ('off', 'halt', 'reduce_only')`),
    index('trading_accounts_user_idx').on(t.userId, t.id),
  ],
);

/** An account's model-provider keys (llm_agent strategies call the model with them), sealed under the master key. */
export const tradingProviderKeys = pgTable(
  'trading_provider_keys',
  {
    accountId: uuid('account_id')
      .notNull()
      .references(() => tradingAccounts.id),
    provider: text('provider').$type<ModelProvider>().notNull(),
    /** Sealed, bound to the account and provider (docs/trading.md#llm-agents). */
    sealedKey: text('sealed_key').notNull(),
    /** The key masked: what listings show. */
    keyHint: text('key_hint').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.provider] })],
);

/**
 * An llm_agent's decisions by what it was asked (the version's hash and the tick's inputs digest) and by
 * the account whose key paid for them. The first answer is kept and every later tick or backtest of that
 * account with the same inputs reuses it, so paper and backtest agree decision for decision and a repeated
 * backtest calls no model; another account (another user running the same public version) asks its own.
 */
export const tradingDecisions = pgTable(
  'trading_decisions',
  {
    accountId: uuid('account_id')
      .notNull()
      .references(() => tradingAccounts.id),
    versionHash: text('version_hash').notNull(),
    inputsDigest: text('inputs_digest').notNull(),
    /** The model, prompt digest, answer, its validation and token usage (docs/trading.md#llm-agents). */
    record: guardedJsonb('record').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.versionHash, t.inputsDigest] })],
);

export const RUNTIME_STATUSES = ['provisioning', 'active', 'paused', 'stopped', 'needs_review', 'failed'] as const;
export type RuntimeStatus = (typeof RUNTIME_STATUSES)[number];

/**
 * Runtimes: a strategy version run on a cron with its own capital (`fundLimitUsd`) and risk limits, and
 * its paper book. `scheduleState` is the runtime status the events schedule was last made to match: the
 * reconciler aligns every runtime where the two differ (a crash between the status move and the schedule
 * call leaves exactly such a row).
 */
export const tradingRuntimes = pgTable(
  'trading_runtimes',
  {
    id: uuid('id').primaryKey(),
    userId: text('user_id').notNull(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => tradingAccounts.id),
    strategyVersionId: uuid('strategy_version_id')
      .notNull()
      .references(() => tradingStrategyVersions.id),
    name: text('name').notNull(),
    cronExpression: text('cron_expression').notNull(),
    fundLimitUsd: doublePrecision('fund_limit_usd').notNull(),
    maxLeverage: doublePrecision('max_leverage').notNull(),
    maxDrawdownPercent: doublePrecision('max_drawdown_percent').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    /** sha256 of the create body: the same key with another body is refused. */
    requestHash: text('request_hash').notNull(),
    status: text('status').$type<RuntimeStatus>().notNull(),
    statusReason: text('status_reason'),
    scheduleState: text('schedule_state'),
    /** The events schedule that fires its ticks (made when provisioning starts; deleted when the runtime ends). */
    scheduleId: uuid('schedule_id'),
    /** The paper book (cash, positions, peak equity): see book.ts. */
    book: guardedJsonb('book').notNull(),
    /** Counts the book's changes: a tick commits only over the book it read (see runtime-store.ts). */
    bookVersion: integer('book_version').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    check(
      'trading_runtimes_status_check',
      sql`${t.status} in ('provisioning', 'active', 'paused', 'stopped', 'needs_review', 'failed')`,
    ),
    check('trading_runtimes_limits_check', sql`${t.fundLimitUsd} > 0 and ${t.maxLeverage} > 0 and ${t.maxDrawdownPercent} > 0`),
    unique('trading_runtimes_idempotency_unique').on(t.userId, t.idempotencyKey),
    index('trading_runtimes_user_idx').on(t.userId, t.id),
    // The reconciler's work: runtimes being provisioned or whose schedule does not match their status.
    index('trading_runtimes_unaligned_idx').on(t.id).where(sql`${t.scheduleState} is distinct from ${t.status}`),
  ],
);

export const EXECUTION_STATUSES = ['completed', 'blocked', 'halted', 'failed', 'placing', 'rejected', 'skipped'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];
/** schedule and manual runs of the strategy; flatten: the owner's close of every position (ticks.ts). */
export const TRIGGER_TYPES = ['schedule', 'manual', 'flatten'] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];

/**
 * Executions. One row per order of a tick, (runtime, trigger, scheduledAt, leg), enforced here: a tick places
 * at most one order per symbol, each its own leg (0, 1, …; a tick without an order is leg 0), all committed in
 * one statement, so a tick delivered twice, or run by two workers, finds its legs and does nothing. Only a
 * `failed` row may be taken over by a retry.
 * `placing`: a live venue's order claimed and not yet filled (the legs of one tick at most per runtime: ticks.ts);
 * `rejected`: the venue refused that order (nothing filled); `skipped`: a scheduled tick consumed after its
 * next one was due (stale: its prices are old), recorded and not run.
 */
export const tradingExecutions = pgTable(
  'trading_executions',
  {
    id: uuid('id').primaryKey(),
    runtimeId: uuid('runtime_id')
      .notNull()
      .references(() => tradingRuntimes.id),
    triggerType: text('trigger_type').notNull(),
    scheduledAt: timestamp('scheduled_at', { withTimezone: true }).notNull(),
    /** Which order of its tick (0, 1, …), in the order the tick places them (docs/trading.md). */
    leg: integer('leg').notNull().default(0),
    status: text('status').$type<ExecutionStatus>().notNull(),
    attemptCount: integer('attempt_count').notNull(),
    strategyVersionHash: text('strategy_version_hash').notNull(),
    inputsDigest: text('inputs_digest'),
    decision: guardedJsonb('decision'),
    riskAssessment: guardedJsonb('risk_assessment'),
    order: guardedJsonb('order'),
    error: guardedJsonb('error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    completedAt: timestamp('completed_at', { withTimezone: true }),
    /** A placing order: until when one caller holds its placement at the venue (engine/ticks.ts, engine/placement.ts; by the database's clock). */
    placingUntil: timestamp('placing_until', { withTimezone: true }),
  },
  (t) => [
    check('trading_executions_status_check', sql`${t.status} in ('completed', 'blocked', 'halted', 'failed', 'placing', 'rejected', 'skipped')`),
    check('trading_executions_trigger_check', sql`${t.triggerType} in ('schedule', 'manual', 'flatten')`),
    unique('trading_executions_tick_unique').on(t.runtimeId, t.triggerType, t.scheduledAt, t.leg),
    index('trading_executions_runtime_idx').on(t.runtimeId, t.id),
    // A runtime's order out at a live venue, read by every tick of it.
    index('trading_executions_placing_idx').on(t.runtimeId).where(sql`${t.status} = 'placing'`),
  ],
);

export const CHARGE_BOUNDARIES = ['strategy_access', 'activation', 'execution', 'market_data'] as const;
export type ChargeBoundary = (typeof CHARGE_BOUNDARIES)[number];
export const CHARGE_STATUSES = ['settling', 'settled', 'failed'] as const;
export type ChargeStatus = (typeof CHARGE_STATUSES)[number];

/**
 * Metered payments (x402, paid by the account's agent wallet). One row per (account, boundary, subject):
 * a thing is paid for once, however often it is retried or raced. A `failed` row (nothing moved) may be
 * taken over by a new authorization; a `settling` one is left to the charge reconciler.
 */
export const tradingCharges = pgTable(
  'trading_charges',
  {
    id: uuid('id').primaryKey(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => tradingAccounts.id),
    /** The runtime it was charged for; null for strategy access bought by a backtest. */
    runtimeId: uuid('runtime_id').references(() => tradingRuntimes.id),
    boundary: text('boundary').$type<ChargeBoundary>().notNull(),
    /** What was bought: `strategy:<id>`, `runtime:<id>`, or `tick:<runtime id>:<trigger>:<scheduledAt>`. */
    subject: text('subject').notNull(),
    amountAtomic: text('amount_atomic').notNull(),
    payTo: text('pay_to').notNull(),
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    payer: text('payer').notNull(),
    nonce: text('nonce').notNull(),
    validBefore: text('valid_before').notNull(),
    status: text('status').$type<ChargeStatus>().notNull(),
    reason: text('reason'),
    transactionHash: text('transaction_hash'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    check('trading_charges_boundary_check', sql`${t.boundary} in ('strategy_access', 'activation', 'execution', 'market_data')`),
    check('trading_charges_status_check', sql`${t.status} in ('settling', 'settled', 'failed')`),
    unique('trading_charges_subject_unique').on(t.accountId, t.boundary, t.subject),
    unique('trading_charges_authorization_unique').on(t.network, t.asset, t.payer, t.nonce),
    index('trading_charges_account_idx').on(t.accountId, t.id),
    index('trading_charges_settling_idx').on(t.updatedAt).where(sql`${t.status} = 'settling'`),
  ],
);

/**
 * Imported market data (`tollgate trading import`, the data source `imported`): one row per symbol,
 * interval and candle start, the prices exact as the file wrote them. A candle imported again replaces
 * the one stored. Shared by the deployment: the operator imports, every strategy may read.
 */
export const tradingCandles = pgTable(
  'trading_candles',
  {
    symbol: text('symbol').notNull(),
    /** 1m, 5m, 15m, 1h or 1d. */
    interval: text('interval').notNull(),
    start: timestamp('start', { withTimezone: true }).notNull(),
    open: numeric('open', { precision: 38, scale: 18 }).notNull(),
    high: numeric('high', { precision: 38, scale: 18 }).notNull(),
    low: numeric('low', { precision: 38, scale: 18 }).notNull(),
    close: numeric('close', { precision: 38, scale: 18 }).notNull(),
    volume: numeric('volume', { precision: 38, scale: 18 }).notNull(),
    importedAt: timestamp('imported_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.symbol, t.interval, t.start] }),
    check('trading_candles_interval_check', sql`${t.interval} in ('1m', '5m', '15m', '1h', '1d')`),
  ],
);

export const BACKTEST_JOB_KINDS = ['backtest', 'optimisation'] as const;
export type BacktestJobKind = (typeof BACKTEST_JOB_KINDS)[number];
export const BACKTEST_JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type BacktestJobStatus = (typeof BACKTEST_JOB_STATUSES)[number];

/**
 * Backtests and optimisations run in the background (backtest-jobs.ts): one row per job, claimed by a worker
 * under a lease (the database's clock), its progress and checkpoint saved as it runs, so a cancelled job, or
 * one whose worker died, resumes where its checkpoint stands.
 */
export const tradingBacktestJobs = pgTable(
  'trading_backtest_jobs',
  {
    id: uuid('id').primaryKey(),
    userId: text('user_id').notNull(),
    strategyId: uuid('strategy_id')
      .notNull()
      .references(() => tradingStrategies.id),
    kind: text('kind').$type<BacktestJobKind>().notNull(),
    /** The request's body as validated (a backtest's or an optimisation's). */
    input: guardedJsonb('input').notNull(),
    status: text('status').$type<BacktestJobStatus>().notNull(),
    /** Asked to stop: the worker running it stops at its next progress save, keeping its checkpoint. */
    cancelRequested: boolean('cancel_requested').notNull().default(false),
    progressDone: integer('progress_done').notNull().default(0),
    progressTotal: integer('progress_total').notNull(),
    /** Where a resumed run starts (a replay's state, or an optimisation's finished trials); null: from the start. */
    checkpoint: guardedJsonb('checkpoint'),
    result: guardedJsonb('result'),
    error: text('error'),
    /** The worker holding it while running, and until when (the database's clock). */
    leaseOwner: text('lease_owner'),
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true }),
    attempts: integer('attempts').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
  },
  (t) => [
    check('trading_backtest_jobs_kind_check', sql`${t.kind} in ('backtest', 'optimisation')`),
    check('trading_backtest_jobs_status_check', sql`${t.status} in ('queued', 'running', 'succeeded', 'failed', 'cancelled')`),
    index('trading_backtest_jobs_user_idx').on(t.userId, t.id),
    // What a worker claims: queued jobs, and running ones whose lease lapsed (a worker died).
    index('trading_backtest_jobs_claim_idx').on(t.createdAt).where(sql`${t.status} in ('queued', 'running')`),
  ],
);
