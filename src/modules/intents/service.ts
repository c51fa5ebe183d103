import { isEmbeddedChain } from '../../chain/settings.js';
import type { AppContext } from '../../context.js';
import { canonicalJson } from '../../platform/canonical-json.js';
import { newId, UUID_PATTERN } from '../../platform/ids.js';
import { intentErrors } from './errors.js';
import type { Deposits, DepositView } from './deposits.js';
import type { Reconciler } from './reconcile.js';
import type { CreateIntentInput } from './schemas.js';
import type { IntentTotals } from './schemas.js';
import type { ListFilter } from './read-store.js';
import { IntentsStore } from './store.js';
import type { IntentRow } from './tables.js';
import { ATOMIC_UNITS_PER_CENT, atomicAmountOf } from './views.js';

/** Create, read and reconcile intents for a project API key. Pay lives in pay.ts. */
export class IntentsService {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: IntentsStore,
    private readonly reconciler: Reconciler,
    private readonly deposits: Deposits,
  ) {}

  /** Idempotent on (merchantId, externalId): the existing intent when the request is the same, 409 otherwise. */
  async create(projectId: string, input: CreateIntentInput): Promise<{ created: boolean; intent: IntentRow }> {
    if (!UUID_PATTERN.test(input.merchantId)) throw intentErrors.merchantNotFound();
    const returnUrl = input.returnUrl ?? null;
    // The schema accepted https, or http on a loopback host; the latter only makes sense for a merchant
    // developing against the embedded devchain, never for a deployment real payers use.
    if (returnUrl !== null && new URL(returnUrl).protocol === 'http:' && !isEmbeddedChain(this.ctx.config)) {
      throw intentErrors.invalidRequest('Request validation failed', [
        { in: 'body', path: '/returnUrl', message: 'must be https (http on a loopback host only while the service runs on the embedded devchain)' },
      ]);
    }
    const projects = this.ctx.services.projects;
    const now = this.ctx.clock.now();
    const draft = {
      id: newId(now.getTime()),
      merchantId: input.merchantId,
      externalId: input.externalId,
      customerRef: input.customerRef ?? null,
      description: input.description ?? null,
      metadata: input.metadata ?? null,
      returnUrl,
      amountUsdCents: input.amountUsdCents,
      amount: atomicAmountOf(input.amountUsdCents),
      createdAt: now,
      expiresAt: new Date(now.getTime() + this.ctx.config.intents.lifetimeSeconds * 1000),
    };
    // The hot path is this one statement; only a refusal or a retry needs the reads below.
    const inserted = await this.store.insertForMerchant(draft, projectId);
    if (inserted) return { created: true, intent: inserted };

    const merchant = await projects.merchantOfProject(projectId, input.merchantId);
    if (!merchant) throw intentErrors.merchantNotFound();
    if (!merchant.enabled) throw intentErrors.merchantDisabled('This merchant is disabled: it takes no new payment intents');
    const existing = await this.store.byExternalId(merchant.id, input.externalId);
    if (!existing) throw new Error('intent vanished after a conflicting insert'); // intents are never deleted
    const differing = differingFields(existing, draft);
    if (differing.length > 0) {
      throw intentErrors.conflict('externalId is already used by an intent with different details', { fields: differing, intentId: existing.id });
    }
    return { created: false, intent: await this.current(existing) };
  }

  /** The intent within the project's boundary; 404 otherwise. */
  async get(projectId: string, intentId: string): Promise<IntentRow> {
    const row = UUID_PATTERN.test(intentId) ? await this.store.byIdInProject(intentId, projectId) : undefined;
    if (!row) throw intentErrors.intentNotFound();
    return this.current(row);
  }

  /**
   * What a payer's checkout page may see of an intent (any project's: its id is the link the payer holds), with its
   * deposit address, made on the first read of a pending intent whose merchant takes payments.
   */
  async checkout(intentId: string): Promise<{ row: IntentRow; merchantName: string; deposit: DepositView | null }> {
    const found = UUID_PATTERN.test(intentId) ? await this.store.byId(intentId) : undefined;
    if (!found) throw intentErrors.intentNotFound();
    const row = await this.current(found);
    const merchant = await this.ctx.services.projects.merchant(row.merchantId);
    const deposit = row.status !== 'pending' || merchant?.enabled ? await this.deposits.viewOf(row) : null;
    return { row, merchantName: merchant?.name ?? '', deposit };
  }

  /** Whether an intent with this id exists (the checkout page answers 404 otherwise). */
  async exists(intentId: string): Promise<boolean> {
    return UUID_PATTERN.test(intentId) && (await this.store.byId(intentId)) !== undefined;
  }

  /** A project's intents for its owner (404 for anyone else), newest first. */
  async listForOwner(userId: string, projectId: string, filter: ListFilter & { before?: string; limit: number }): Promise<IntentRow[]> {
    await this.ctx.services.projects.requireOwned(userId, projectId);
    const now = this.ctx.clock.now();
    const rows = await this.store.listInProject(projectId, filter, now);
    // Read-only: a pending intent past its expiry is shown as what it is, without moving it here.
    return rows.map((row) => (row.status === 'pending' && row.expiresAt <= now ? { ...row, status: 'expired' as const } : row));
  }

  /** Totals of the intents the same filters select, for the owner's summary line (404 for anyone else). */
  async totalsForOwner(userId: string, projectId: string, filter: ListFilter): Promise<IntentTotals> {
    await this.ctx.services.projects.requireOwned(userId, projectId);
    const row = await this.store.totalsInProject(projectId, filter, this.ctx.clock.now());
    return {
      count: Number(row.count),
      settledCount: Number(row.settledCount),
      settledUsdCents: Number(row.settledUsdCents),
      receivedUsdCents: Number(BigInt(row.received) / ATOMIC_UNITS_PER_CENT),
      refundedUsdCents: Number(row.refundedUsdCents),
    };
  }

  /** Manual reconcile: idempotent; 503 reconciliation_unavailable when the chain or index is unreachable. */
  async reconcile(projectId: string, intentId: string): Promise<IntentRow> {
    const row = await this.get(projectId, intentId);
    const outcome = await this.reconciler.reconcile(row);
    if (outcome === 'unavailable') throw intentErrors.reconciliationUnavailable();
    return outcome;
  }

  /** The row with a due expiry applied (pending past expiresAt by the database's clock reads as, and becomes, expired). */
  private async current(row: IntentRow): Promise<IntentRow> {
    if (row.status !== 'pending') return row;
    const now = this.ctx.clock.now();
    // Not moved here and not due: as read. Due but moved by someone else (the worker, a concurrent pay): read it again.
    if (!(await this.store.expire(row.id, now)) && row.expiresAt > now) return row;
    return (await this.store.byId(row.id)) ?? row;
  }
}

type Comparable = Pick<IntentRow, 'amountUsdCents' | 'customerRef' | 'description' | 'metadata' | 'returnUrl'>;

/** The fields of the create request that differ from the stored intent (metadata by JSON value). */
function differingFields(existing: Comparable, request: Comparable): string[] {
  const fields: string[] = [];
  if (existing.amountUsdCents !== request.amountUsdCents) fields.push('amountUsdCents');
  if (existing.customerRef !== request.customerRef) fields.push('customerRef');
  if (existing.description !== request.description) fields.push('description');
  if (canonicalJson(existing.metadata) !== canonicalJson(request.metadata)) fields.push('metadata');
  // An extension, compared like description: a repeat that silently kept another link would mislead the merchant.
  if (existing.returnUrl !== request.returnUrl) fields.push('returnUrl');
  return fields;
}

