import type { z } from 'zod';
import { markToMarket, type Book } from './book.js';
import type { ChargeRow } from './charge-store.js';
import type { RuntimeRow, ExecutionRow } from './runtime-store.js';
import type { accountSchema, bookSchema, chargeSchema, executionSchema, runtimeSchema, strategySchema, versionSchema } from './schemas.js';
import type { AccountRow, StrategyRow, VersionRow } from './store.js';

// Rows -> API records: the only place that decides what a client sees.

type VersionView = z.infer<typeof versionSchema>;
export type ExecutionView = z.infer<typeof executionSchema>;

export const versionView = (row: VersionRow): VersionView => ({
  id: row.id,
  strategyId: row.strategyId,
  number: row.number,
  kind: row.kind as 'quant_signal',
  schemaVersion: row.schemaVersion as 1,
  definition: row.definition as VersionView['definition'],
  contentHash: row.contentHash,
  createdAt: row.createdAt.toISOString(),
});

/** The strategy with its latest version, and every version when `all` is given. */
export function strategyView(row: StrategyRow, versions: VersionRow[], all = false): z.infer<typeof strategySchema> {
  const latest = versions.find((v) => v.number === row.latestVersion)!;
  return {
    id: row.id,
    userId: row.userId,
    name: row.name,
    visibility: row.visibility,
    access: row.accessPriceUsd && row.accessPayTo ? { priceUsd: row.accessPriceUsd, payTo: row.accessPayTo } : null,
    latestVersion: versionView(latest),
    ...(all ? { versions: versions.map(versionView) } : {}),
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

export const executionView = (row: ExecutionRow): ExecutionView => ({
  id: row.id,
  runtimeId: row.runtimeId,
  triggerType: row.triggerType as 'schedule' | 'manual',
  scheduledAt: row.scheduledAt.toISOString(),
  status: row.status,
  attemptCount: row.attemptCount,
  strategyVersionHash: row.strategyVersionHash,
  inputsDigest: row.inputsDigest,
  decision: row.decision as ExecutionView['decision'],
  riskAssessment: row.riskAssessment as ExecutionView['riskAssessment'],
  order: row.order as ExecutionView['order'],
  error: row.error as ExecutionView['error'],
  createdAt: row.createdAt.toISOString(),
  completedAt: row.completedAt ? row.completedAt.toISOString() : null,
});

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
