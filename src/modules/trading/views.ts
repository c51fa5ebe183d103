import type { z } from 'zod';
import { definedOnly } from '../../platform/defined-only.js';
import { isPricedFor } from './metering/access.js';
import { markToMarket, type Book } from './engine/book.js';
import type { ChargeRow } from './metering/charge-store.js';
import type { RuntimeRow, ExecutionRow } from './runtimes/runtime-store.js';
import type { accountSchema, chargeSchema } from './schemas/accounts.js';
import type { bookSchema, executionSchema, runtimeSchema } from './schemas/runtimes.js';
import type { strategySchema, versionSchema } from './schemas/strategies.js';
import type { LlmAgentDefinition } from './strategies/llm-agent.js';
import type { QuantSignalDefinition } from './strategies/quant-signal.js';
import type { AccountRow, StrategyRow, VersionRow } from './store.js';

// Rows -> API records: the only place that decides what a client sees.

type VersionView = z.infer<typeof versionSchema>;
export type ExecutionView = z.infer<typeof executionSchema>;

/** A version; its definition only when `readable` (see isPricedFor), its summary always. */
export function versionView(row: VersionRow, readable: boolean): VersionView {
  const definition = row.definition as QuantSignalDefinition | LlmAgentDefinition;
  const model = 'model' in definition ? { provider: definition.model.provider, model: definition.model.model } : undefined;
  return {
    id: row.id,
    strategyId: row.strategyId,
    number: row.number,
    kind: row.kind as 'quant_signal',
    schemaVersion: row.schemaVersion as 1,
    summary: definedOnly({ universe: definition.universe, dataSources: definition.dataSources, candleInterval: definition.candleInterval, model }),
    definition: readable ? (definition as VersionView['definition']) : null,
    contentHash: row.contentHash,
    createdAt: row.createdAt.toISOString(),
  };
}

/** The strategy as `viewer` may read it, with its latest version, and every version when `all` is given. */
export function strategyView(row: StrategyRow, versions: VersionRow[], viewer: string, all = false): z.infer<typeof strategySchema> {
  const latest = versions.find((v) => v.number === row.latestVersion)!;
  const readable = !isPricedFor(row, viewer);
  return {
    id: row.id,
    userId: row.userId,
    name: row.name,
    description: row.description,
    visibility: row.visibility,
    access: row.accessPriceUsd && row.accessPayTo ? { priceUsd: row.accessPriceUsd, payTo: row.accessPayTo } : null,
    latestVersion: versionView(latest, readable),
    ...(all ? { versions: versions.map((v) => versionView(v, readable)) } : {}),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export const accountView = (row: AccountRow, wallet: { address: string | null; status: string }): z.infer<typeof accountSchema> => ({
  id: row.id,
  userId: row.userId,
  name: row.name,
  type: 'agent_wallet',
  walletId: row.walletId,
  address: wallet.address,
  status: wallet.status as 'provisioning' | 'active' | 'failed',
  killSwitch: row.killSwitch,
  maxExposureUsd: row.maxExposureUsd,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

/** The book valued at `prices` (the feed's at `at`). */
export function bookView(book: Book, prices: Record<string, number>, at: Date): z.infer<typeof bookSchema> {
  // Exact in the book, numbers in the view (JSON numbers, as the spec's book fields are).
  const marked = markToMarket(book, prices);
  return {
    cashUsd: Number(book.cashUsd),
    equityUsd: marked.equityUsd,
    exposureUsd: marked.exposureUsd,
    realizedPnlUsd: Number(book.realizedPnlUsd),
    unrealizedPnlUsd: marked.unrealizedPnlUsd,
    pnlUsd: Number(book.realizedPnlUsd) + marked.unrealizedPnlUsd - Number(book.feesUsd),
    feesUsd: Number(book.feesUsd),
    peakEquityUsd: Math.max(Number(book.peakEquityUsd), marked.equityUsd),
    drawdownPercent: marked.drawdownPercent,
    trades: book.trades,
    positions: Object.entries(book.positions).map(([symbol, p]) => ({ symbol, qty: Number(p.qty), avgPrice: Number(p.avgPrice), price: prices[symbol] ?? Number(p.avgPrice), stopLoss: p.stopLoss, takeProfit: p.takeProfit })),
    markedAt: at.toISOString(),
  };
}

export const runtimeView = (row: RuntimeRow, version: VersionRow, book: z.infer<typeof bookSchema>): z.infer<typeof runtimeSchema> => ({
  id: row.id,
  userId: row.userId,
  name: row.name,
  strategyId: version.strategyId,
  strategyVersionId: row.strategyVersionId,
  strategyVersionHash: version.contentHash,
  accountId: row.accountId,
  cronExpression: row.cronExpression,
  fundLimitUsd: row.fundLimitUsd,
  maxLeverage: row.maxLeverage,
  maxDrawdownPercent: row.maxDrawdownPercent,
  idempotencyKey: row.idempotencyKey,
  status: row.status,
  statusReason: row.statusReason,
  book,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

/**
 * An execution; `sealed` for a runtime on another owner's priced version (see isPricedFor), whose decision
 * shows what the strategy did and not why (sealedDecision).
 */
export const executionView = (row: ExecutionRow, sealed: boolean): ExecutionView => ({
  id: row.id,
  runtimeId: row.runtimeId,
  triggerType: row.triggerType as 'schedule' | 'manual',
  scheduledAt: row.scheduledAt.toISOString(),
  leg: row.leg,
  status: row.status,
  attemptCount: row.attemptCount,
  strategyVersionHash: row.strategyVersionHash,
  inputsDigest: row.inputsDigest,
  decision: sealed ? sealedDecision(row.decision as ExecutionView['decision']) : (row.decision as ExecutionView['decision']),
  riskAssessment: row.riskAssessment as ExecutionView['riskAssessment'],
  order: row.order as ExecutionView['order'],
  error: row.error as ExecutionView['error'],
  createdAt: row.createdAt.toISOString(),
  completedAt: row.completedAt ? row.completedAt.toISOString() : null,
});

/**
 * What a decision of another owner's priced version shows its runtime's (or backtest's) user: what the
 * strategy did, never why, since the why echoes the definition (a signal's `params`, the rules' conditions in
 * `because` and their indicators' `values`, an llm_agent's answer and rationale). Fields by decision kind,
 * anything unlisted withheld; an `exit` (the book's protective levels) and a `flatten` (the owner's) are not
 * the strategy's and show whole.
 */
const SEALED_FIELDS: Record<string, readonly string[] | 'all'> = {
  quant_signal: ['kind', 'action', 'symbol'],
  llm_agent: ['kind', 'model', 'outcome', 'usage', 'cached', 'action', 'symbol'],
  exit: 'all',
  flatten: 'all',
};
/** The venue's word on the decided order (too small, or a limit it could not fill) and the limits' (cut to fit), whatever the kind. */
const ORDER_FIELDS = ['belowMinimum', 'unfilled', 'limitPrice', 'capped'];

export function sealedDecision(decision: Record<string, unknown> | null): Record<string, unknown> | null {
  if (!decision) return null;
  const shown = SEALED_FIELDS[String(decision.kind)] ?? ['kind', 'action', 'symbol'];
  if (shown === 'all') return decision;
  const kept = Object.fromEntries(Object.entries(decision).filter(([field]) => shown.includes(field) || ORDER_FIELDS.includes(field)));
  // An llm_agent's error is ours (no key, the provider's refusal, late) unless the answer was invalid: then it quotes the model.
  if (decision.kind === 'llm_agent' && decision.outcome !== 'invalid' && decision.error != null) kept.error = decision.error;
  return kept;
}

export const chargeView = (row: ChargeRow): z.infer<typeof chargeSchema> => ({
  id: row.id,
  accountId: row.accountId,
  runtimeId: row.runtimeId,
  boundary: row.boundary,
  subject: row.subject,
  amount: row.amountAtomic,
  payTo: row.payTo,
  payer: row.payer,
  network: row.network,
  asset: row.asset,
  status: row.status,
  reason: row.reason,
  transaction: row.transactionHash,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});
