// What the public facilitator origin adds to the engine's settle policy (minimum amount, payer ≠ payTo,
// per-payer and per-payTo budgets: x402/facilitator/settle-policy.ts, which every path meets). Anyone can
// call this origin, so: which payTo it serves (FACILITATOR_PAY_TO_POLICY) and how many settles per
// merchant owner a window may hold (counted in PostgreSQL, shared by every node). These rules live here,
// in the module that owns the public origin: they ask the projects module for its merchants.
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { getAddress, isAddress } from 'viem';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../platform/http/errors.js';
import type { Caller } from '../../platform/request-context.js';
import type { Facilitator } from '../../x402/facilitator/facilitator.js';
import { Reason } from '../../x402/facilitator/reasons.js';

export interface PolicyRefusal {
  reason: string;
  message: string;
}

export class PublicFacilitatorPolicy {
  readonly #sellers: Set<string>;

  constructor(
    private readonly ctx: AppContext,
    private readonly facilitator: Facilitator,
  ) {
    const { sellers } = ctx.config.facilitatorPayTo;
    const listed = [...sellers, ctx.config.x402TestPayTo, ctx.config.storage.payTo].filter((a): a is string => a !== null);
    this.#sellers = new Set(listed.map((a) => getAddress(a)));
  }

  /**
   * The payTo this origin serves under `registered`: an enabled merchant's, a FACILITATOR_SELLERS address,
   * X402_TEST_PAY_TO or STORAGE_PAY_TO. (The minimum amount and payer ≠ payTo are the engine's, for every
   * path: x402/facilitator/settle-policy.ts.) Malformed fields are the engine's to name.
   */
  async terms(_payload: PaymentPayload, requirements: PaymentRequirements): Promise<PolicyRefusal | null> {
    if (this.ctx.config.facilitatorPayTo.policy === 'any' || !isAddress(requirements.payTo, { strict: false })) return null;
    const payTo = getAddress(requirements.payTo);
    if (this.#sellers.has(payTo) || (await this.ctx.services.projects.isMerchantPayTo(payTo))) return null;
    return {
      reason: Reason.invalidPaymentRequirements,
      message: `payTo ${payTo} is not served by this facilitator: it settles only for registered merchants and configured sellers`,
    };
  }

  /**
   * Counts a settle against the budgets of the merchants' owners at its payTo; throws 429 when they are
   * spent (registering more merchants does not buy more settles). The payer's and payTo's budgets are the
   * engine's (every path spends them). Only a payment that verifies now is counted (the one kind that can
   * spend gas): a forged payload cannot use up someone's budget.
   */
  async chargeOwners(payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller): Promise<void> {
    const owners = await this.ctx.services.projects.merchantOwnersOf(getAddress(requirements.payTo));
    if (owners.length === 0) return;
    const verdict = await this.facilitator.verify(payload, requirements, caller);
    if (!verdict.isValid) return;
    const { settlePerOwner, windowSeconds } = this.ctx.config.facilitatorLimits;
    const byOwner = await this.ctx.rateLimiter.hitMany(
      owners.map((owner) => ({ key: `facilitator-settle:owner:${owner}`, limit: settlePerOwner })),
      windowSeconds,
    );
    // Anyone may register a merchant at any payTo: one owner over budget must not block the others, so the
    // owners' budget is spent only when every owner of the payTo has spent theirs.
    if (byOwner.every((h) => !h.allowed)) {
      const retryAfter = Math.min(...byOwner.map((h) => h.retryAfterSeconds));
      throw new ApiError(429, 'rate_limited', `Too many settles for the owners of payTo ${getAddress(requirements.payTo)} in this window; nothing was sent`, undefined, { 'retry-after': String(retryAfter) });
    }
  }
}
