// What the public facilitator origin adds to the engine's checks. Anyone can call it and every
// settle spends our relayer's gas, so: which payTo it serves (FACILITATOR_PAY_TO_POLICY), and how
// many settles per payer and per payTo a window may hold (counted in PostgreSQL, shared by every
// node). These rules live here, in the module that owns the public origin, not in the x402/ engine:
// our own paid endpoints call the engine in-process with payTo values that are ours by construction,
// and this module may ask the projects module for its merchants directly (no port through x402/).
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { getAddress, isAddress } from 'viem';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../platform/http/errors.js';
import type { Facilitator } from '../../x402/facilitator/facilitator.js';
import { Reason } from '../../x402/facilitator/reasons.js';
import { eip3009PayloadSchema } from '../../x402/payload.js';

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

  /** `registered`: payTo must be an enabled merchant's, a FACILITATOR_SELLERS address, X402_TEST_PAY_TO or STORAGE_PAY_TO. */
  async payTo(requirements: PaymentRequirements): Promise<PolicyRefusal | null> {
    if (this.ctx.config.facilitatorPayTo.policy === 'any') return null;
    // A malformed payTo is the engine's to name (invalid_payment_requirements).
    if (!isAddress(requirements.payTo, { strict: false })) return null;
    const payTo = getAddress(requirements.payTo);
    if (this.#sellers.has(payTo) || (await this.ctx.services.projects.isMerchantPayTo(payTo))) return null;
    return {
      reason: Reason.invalidPaymentRequirements,
      message: `payTo ${payTo} is not served by this facilitator: it settles only for registered merchants and configured sellers`,
    };
  }

  /**
   * Counts a settle against its payer's and its payTo's budget; throws 429 when either is spent.
   * Only a payment that verifies now is counted (the one kind that can spend gas): a forged payload
   * naming someone else as payer, or flooding a merchant's payTo, cannot use up their budget.
   * Anything else goes on to the engine, which refuses it, or answers a retry from its ledger.
   */
  async chargeSettle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<void> {
    const verdict = await this.facilitator.verify(payload, requirements);
    if (!verdict.isValid) return;
    const parsed = eip3009PayloadSchema.safeParse(payload.payload);
    if (!parsed.success) return;
    const { settlePerPayer, settlePerPayTo, windowSeconds } = this.ctx.config.facilitatorLimits;
    const payer = getAddress(parsed.data.authorization.from);
    const payTo = getAddress(requirements.payTo);
    const [byPayer, byPayTo] = await Promise.all([
      this.ctx.rateLimiter.hit(`facilitator-settle:payer:${payer}`, { limit: settlePerPayer, windowSeconds }),
      this.ctx.rateLimiter.hit(`facilitator-settle:pay-to:${payTo}`, { limit: settlePerPayTo, windowSeconds }),
    ]);
    if (!byPayer.allowed || !byPayTo.allowed) {
      const which = byPayer.allowed ? `payTo ${payTo}` : `payer ${payer}`;
      const retryAfter = Math.max(byPayer.allowed ? 0 : byPayer.retryAfterSeconds, byPayTo.allowed ? 0 : byPayTo.retryAfterSeconds);
      throw new ApiError(429, 'rate_limited', `Too many settles for ${which} in this window; nothing was sent`, undefined, { 'retry-after': String(retryAfter) });
    }
  }
}
