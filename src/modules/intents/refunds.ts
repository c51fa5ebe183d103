// Refunds (docs/intents.md#refunds): an intent's payments, or part of them, paid back to the payer from the
// Tollgate wallet the project names as its refund wallet. The order of the steps is what makes it exactly once:
// 1. the cheap refusals (no refund wallet, nothing to pay back to), then the refund is recorded with its cents
//    reserved on the intent (refund-store.ts): what is not left to refund is refused there, by the database;
// 2. only then the wallet transfer, under the refund's own id as its payment id: the wallets module records that
//    payment before its signature can leave the process and refuses a second one under the same id, so however
//    often the refund is sent (a retry, a takeover of its Idempotency-Key, the reconciler), one transfer pays it;
// 3. its outcome: settled → succeeded (payment_intent.refunded); failed (nothing moved) → failed, cents given back;
//    pending or unknown → the refund stays pending and the reconciler follows the wallet payment to its end.
import type { AppContext } from '../../context.js';
import { ApiError } from '../../platform/http/errors.js';
import { crashPoint } from '../../platform/crash-points.js';
import { newId, UUID_PATTERN } from '../../platform/ids.js';
import type { Caller } from '../../platform/request-context.js';
import { intentErrors } from './errors.js';
import type { RefundRow, RefundStore } from './refund-store.js';
import type { IntentsStore } from './store.js';
import { ATOMIC_UNITS_PER_CENT } from './views.js';

/** The wallet payment as the refund reads it (the wallets module's PaymentView, the fields it needs). */
interface WalletPayment {
  status: 'pending' | 'settled' | 'failed' | 'unknown';
  transaction: string | null;
  error?: string | null;
}

export class Refunds {
  constructor(
    private readonly ctx: AppContext,
    private readonly intents: IntentsStore,
    readonly store: RefundStore,
  ) {}

  /**
   * Records and sends a refund of `amountUsdCents` of the project's intent. `id` is the refund's id, stable for an
   * Idempotency-Key: a call resumed after its first one died finds that refund and carries it on. `caller`: the request
   * it was asked for (its id goes on the wallet payment).
   */
  async create(projectId: string, intentId: string, amountUsdCents: number, id: string = newId(), caller?: Caller): Promise<RefundRow> {
    const existing = await this.store.refund(id);
    if (existing) return existing.status === 'pending' ? this.send(existing, caller) : existing;
    const intent = UUID_PATTERN.test(intentId) ? await this.intents.byIdInProject(intentId, projectId) : undefined;
    if (!intent) throw intentErrors.intentNotFound();
    const wallet = await this.ctx.services.projects.refundWallet(projectId);
    if (!wallet) throw intentErrors.refundWalletNotConfigured();
    if (!(await this.ctx.services.wallets.credentialLive(wallet.walletId, wallet.credentialId))) throw intentErrors.refundWalletUnavailable();
    const recipient = intent.payer ?? (await this.store.firstDepositor(intent.id));
    const refundable = refundableCents(intent);
    if (!recipient || refundable <= 0) throw intentErrors.refundExceedsRefundable(amountUsdCents, Math.max(0, refundable));
    const refund = await this.store.reserve({
      id,
      intentId: intent.id,
      projectId,
      amountUsdCents,
      recipient,
      walletId: wallet.walletId,
      walletCredentialId: wallet.credentialId,
      createdAt: this.ctx.clock.now(),
    });
    if (!refund) {
      const now = await this.intents.byId(intent.id);
      throw intentErrors.refundExceedsRefundable(amountUsdCents, Math.max(0, now ? refundableCents(now) : 0));
    }
    crashPoint('refund.after-record');
    return this.send(refund, caller);
  }

  async list(projectId: string, intentId: string): Promise<RefundRow[]> {
    const intent = UUID_PATTERN.test(intentId) ? await this.intents.byIdInProject(intentId, projectId) : undefined;
    if (!intent) throw intentErrors.intentNotFound();
    return this.store.refundsOf(intent.id);
  }

  /**
   * Sends the refund's wallet transfer (once, whoever calls: the payment id is the refund's) and records what came
   * of it. A transfer that could not even be made (the wallet not active, signing refused) sent nothing: failed.
   */
  private async send(refund: RefundRow, caller?: Caller): Promise<RefundRow> {
    let payment: WalletPayment | null;
    try {
      payment = await this.ctx.services.walletTransfer(
        refund.walletId,
        refund.walletCredentialId,
        { to: refund.recipient, amount: (BigInt(refund.amountUsdCents) * ATOMIC_UNITS_PER_CENT).toString() },
        refund.id,
        caller,
      );
      crashPoint('refund.after-send');
    } catch (error) {
      // Another sender holds this refund's payment (transfer_in_progress): its outcome is read, not made again.
      payment = await this.ctx.services.wallets.payment(refund.walletId, refund.id);
      if (!payment) {
        if (!(error instanceof ApiError)) throw error;
        await this.store.fail(refund.id, { code: error.code, message: error.message }, this.ctx.clock.now());
        return (await this.store.refund(refund.id))!;
      }
    }
    await this.apply(refund, payment);
    return (await this.store.refund(refund.id))!;
  }

  private async apply(refund: RefundRow, payment: WalletPayment): Promise<void> {
    const now = this.ctx.clock.now();
    if (payment.status === 'settled' && payment.transaction) await this.store.succeed(refund.id, payment.transaction.toLowerCase(), now);
    else if (payment.status === 'failed') await this.store.fail(refund.id, { code: 'refund_transfer_failed', message: payment.error ?? 'The refund transfer moved nothing' }, now);
  }

  /**
   * Carries on refunds pending since before `graceSeconds` ago: a wallet payment under the refund's id is followed
   * (the wallets module's reconciler decides it from the chain); none means nothing was signed and sent for it
   * (the process died between recording the refund and sending it), so it is sent now, once.
   */
  async reconcilePending(graceSeconds: number, limit: number): Promise<number> {
    const pending = await this.store.pendingSince(new Date(this.ctx.clock.now().getTime() - graceSeconds * 1000), limit);
    for (const refund of pending) {
      try {
        const payment = await this.ctx.services.wallets.payment(refund.walletId, refund.id);
        if (payment) await this.apply(refund, payment);
        else await this.send(refund);
      } catch (error) {
        this.ctx.log.warn({ err: error, refundId: refund.id }, 'refund reconciliation failed; tried again');
      }
    }
    return pending.length;
  }
}

/** Cents that may still be refunded: what was received (whole cents) less what is refunded or being refunded. */
export const refundableCents = (intent: { receivedAmount: string; refundedUsdCents: number }) =>
  Number(BigInt(intent.receivedAmount) / ATOMIC_UNITS_PER_CENT) - intent.refundedUsdCents;
