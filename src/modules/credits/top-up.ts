import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from '@x402/core/types';
import type { AppContext } from '../../context.js';
import { crashPoint } from '../../platform/crash-points.js';
import { newId } from '../../platform/ids.js';
import type { Caller } from '../../platform/request-context.js';
import { eip3009PayloadSchema } from '../../x402/payload.js';
import { FacilitatorUnavailableError } from '../../x402/server/errors.js';
import { NO_MATCH } from '../../x402/server/charge.js';
import type { PricedResource } from '../../x402/server/payment-steps.js';
import { toApiError } from '../../x402/server/service.js';
import { creditsErrors } from './errors.js';
import type { TopUpView } from './schemas.js';
import { SYSTEM_ACCOUNTS, type CreditsStore, type TopUpRow } from './store.js';

/** What the route sends: the x402 challenge, or the credited top-up with its PAYMENT-RESPONSE. */
export type TopUpAnswer =
  | { status: 402; paymentRequired: PaymentRequired; settlement?: SettleResponse }
  | { status: 200; topUp: TopUpView; balanceUsdCents: number; settlement?: SettleResponse };

/**
 * One payment of the top-up: its name in that settle's payment-identifier and in chain_payment_uses. The
 * reconciler claims the same name, so it lives here, below reconcile.ts.
 */
export const settlementRecordOf = (topUpId: string, nonce: string) => `credits:top-up:${topUpId}:${nonce.toLowerCase()}`;

/** Atomic USDG units per credit cent (6 decimals: one cent is 10,000 units). */
export const atomicPerCent = (decimals: number) => 10n ** BigInt(decimals - 2);

/**
 * POST /credits/top-up: credits bought with an x402 payment. Order matters: the challenge and its match
 * first (the amount is the body's), then the one claim of the authorization (a row in `settling`), then
 * the settle, the only step that moves money, then the credit, written with the top-up's move to
 * `settled` in one transaction. A payment credits once: the claim is unique per authorization, the
 * credit unique per top-up. An unknown settle outcome leaves the claim for the reconciler.
 */
export class TopUpService {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: CreditsStore,
    private readonly payTo: string | null,
  ) {}

  /** `topUpId`: an Idempotency-Key's stable id: the top-up made under it is answered again, never made twice. */
  async topUp(userId: string, amountUsdCents: number, paymentHeader: PaymentPayload | null, topUpId?: string, caller?: Caller): Promise<TopUpAnswer> {
    if (!this.payTo) throw creditsErrors.unavailable();
    const challenge = this.ctx.x402.paymentRequired(this.resource(amountUsdCents), 'Payment required');
    if (!paymentHeader) return { status: 402, paymentRequired: challenge };
    const earlier = topUpId === undefined ? null : await this.store.topUpById(topUpId);
    if (earlier) return this.existing(userId, earlier);
    const requirements = this.ctx.x402.match(challenge, paymentHeader);
    if (!requirements) return { status: 402, paymentRequired: { ...challenge, error: NO_MATCH } };
    const parsed = eip3009PayloadSchema.safeParse(paymentHeader.payload);
    if (!parsed.success) throw creditsErrors.invalidPayment('The payment is not an exact EVM (EIP-3009) authorization');
    const { authorization } = parsed.data;
    const key = { network: requirements.network, asset: requirements.asset.toLowerCase(), payer: authorization.from.toLowerCase(), nonce: authorization.nonce.toLowerCase() };

    const now = this.ctx.clock.now();
    const claimed = await this.store.claimTopUp({
      id: topUpId ?? newId(),
      userId,
      amountCents: amountUsdCents,
      ...key,
      payTo: requirements.payTo,
      amountAtomic: requirements.amount,
      validBefore: authorization.validBefore,
      createdAt: now,
      updatedAt: now,
    });
    if (!claimed) return this.existing(userId, await this.store.topUpByAuthorization(key.network, key.asset, key.payer, key.nonce));
    crashPoint('credits.after-claim');
    return this.settle(claimed, paymentHeader, requirements, challenge, caller);
  }

  private async settle(topUp: TopUpRow, payload: PaymentPayload, requirements: PaymentRequirements, challenge: PaymentRequired, caller: Caller | undefined): Promise<TopUpAnswer> {
    let outcome;
    try {
      outcome = await this.ctx.x402.settle(payload, requirements, settlementRecordOf(topUp.id, topUp.nonce), caller);
      crashPoint('credits.after-settle');
    } catch (error) {
      // After the claim, an exception says nothing about what reached the chain: the reconciler decides.
      this.ctx.log.error({ err: error, topUpId: topUp.id }, 'top-up settle threw; it stays settling for reconciliation');
      throw creditsErrors.settlementUnknown(topUp.id);
    }
    switch (outcome.kind) {
      case 'settled': {
        const balance = await this.creditSettled(topUp, outcome.transaction);
        const settled = (await this.store.topUpById(topUp.id)) ?? topUp;
        return { status: 200, topUp: topUpView(settled), balanceUsdCents: balance, settlement: outcome.response };
      }
      case 'failed':
        // Refused: nothing moved. The claim goes, so the same authorization may be sent again (e.g. once funded).
        await this.store.releaseTopUp(topUp.id);
        return { status: 402, paymentRequired: { ...challenge, error: outcome.reason }, settlement: outcome.response };
      case 'unavailable':
        await this.store.releaseTopUp(topUp.id);
        throw toApiError(new FacilitatorUnavailableError(outcome.message));
      case 'unknown':
        throw creditsErrors.settlementUnknown(topUp.id);
    }
  }

  /**
   * settling → settled and the credit, together. Also the reconciler's way in: whoever moves the row
   * credits; a second caller finds it settled and credits nothing. Returns the user's balance after.
   */
  async creditSettled(topUp: TopUpRow, transactionHash: string): Promise<number> {
    const now = this.ctx.clock.now();
    return this.ctx.db.transaction(async (tx) => {
      if (!(await this.store.markTopUpSettled(tx, topUp.id, transactionHash.toLowerCase(), now))) return this.store.balance(topUp.userId);
      const moved = await this.store.credit(tx, topUp.userId, SYSTEM_ACCOUNTS.topUps, topUp.amountCents, { cause: 'top_up', topUpId: topUp.id }, newId(), now);
      return moved.balanceCents;
    });
  }

  /** The authorization already has a top-up: the same user's settled one is answered again, never credited twice. */
  private async existing(userId: string, row: TopUpRow | null): Promise<TopUpAnswer> {
    if (!row || row.userId !== userId || row.status === 'failed') throw creditsErrors.authorizationUsed();
    if (row.status === 'settling') throw creditsErrors.paymentPending(row.id);
    return { status: 200, topUp: topUpView(row), balanceUsdCents: await this.store.balance(userId) };
  }

  private resource(amountUsdCents: number): PricedResource {
    const asset = this.ctx.x402.asset;
    const dollars = (amountUsdCents / 100).toFixed(2);
    return {
      url: `${this.ctx.urls.api}/credits/top-up`,
      description: `Tollgate credits: $${dollars}`,
      mimeType: 'application/json',
      amount: (BigInt(amountUsdCents) * atomicPerCent(asset.decimals)).toString(),
      payTo: this.payTo!,
    };
  }
}

export function topUpView(row: TopUpRow): TopUpView {
  return {
    id: row.id,
    amountUsdCents: row.amountCents,
    status: row.status,
    payer: row.payer,
    transaction: row.transactionHash,
    createdAt: row.createdAt.toISOString(),
  };
}
