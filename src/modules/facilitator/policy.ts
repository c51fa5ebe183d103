// What the public facilitator origin adds to the engine's checks. Anyone can call it and every
// settle spends our relayer's gas, so: which payTo it serves (FACILITATOR_PAY_TO_POLICY), what it will
// not settle at all (below FACILITATOR_MIN_SETTLE_AMOUNT, or a payer paying itself: neither is a
// purchase, both burn gas), and how many settles per payer, per payTo and per merchant owner a window
// may hold (counted in PostgreSQL, shared by every node). These rules live here, in the module that owns the public origin, not in the x402/ engine:
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

  /**
   * The terms this origin serves: at least the minimum amount, a payer other than the payee, and under
   * `registered` a payTo that is an enabled merchant's, a FACILITATOR_SELLERS address, X402_TEST_PAY_TO or
   * STORAGE_PAY_TO. Malformed fields are the engine's to name.
   */
  async terms(payload: PaymentPayload, requirements: PaymentRequirements): Promise<PolicyRefusal | null> {
    const minimum = this.ctx.config.facilitatorLimits.minSettleAmount;
    // Zero is the engine's to refuse (its own reason); dust above it is ours.
    if (/^\d+$/.test(requirements.amount) && BigInt(requirements.amount) > 0n && BigInt(requirements.amount) < minimum) {
      return { reason: Reason.invalidPaymentRequirements, message: `amount ${requirements.amount} is below this facilitator's minimum of ${minimum} atomic units` };
    }
    if (!isAddress(requirements.payTo, { strict: false })) return null;
    const payTo = getAddress(requirements.payTo);
    const from = eip3009PayloadSchema.safeParse(payload.payload).data?.authorization.from;
    if (from && isAddress(from, { strict: false }) && getAddress(from) === payTo) {
      return { reason: Reason.invalidPaymentRequirements, message: 'the payer is the payee: a payment to oneself buys nothing, and this facilitator does not settle it' };
    }
    if (this.ctx.config.facilitatorPayTo.policy === 'any') return null;
    if (this.#sellers.has(payTo) || (await this.ctx.services.projects.isMerchantPayTo(payTo))) return null;
    return {
      reason: Reason.invalidPaymentRequirements,
      message: `payTo ${payTo} is not served by this facilitator: it settles only for registered merchants and configured sellers`,
    };
  }

  /**
   * Counts a settle against its payer's, its payTo's and its merchants' owners' budgets; throws 429 when
   * one is spent (registering more merchants does not buy more settles).
   * Only a payment that verifies now is counted (the one kind that can spend gas): a forged payload
   * naming someone else as payer, or flooding a merchant's payTo, cannot use up their budget.
   * Anything else goes on to the engine, which refuses it, or answers a retry from its ledger.
   */
  async chargeSettle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<void> {
    const verdict = await this.facilitator.verify(payload, requirements);
    if (!verdict.isValid) return;
    const parsed = eip3009PayloadSchema.safeParse(payload.payload);
    if (!parsed.success) return;
    const { settlePerPayer, settlePerPayTo, settlePerOwner, windowSeconds } = this.ctx.config.facilitatorLimits;
    const payer = getAddress(parsed.data.authorization.from);
    const payTo = getAddress(requirements.payTo);
    const owners = await this.ctx.services.projects.merchantOwnersOf(payTo);
    // All the budgets in one statement (a round trip each was most of this origin's database work per settle).
    const [byPayer, byPayTo, ...byOwner] = await this.ctx.rateLimiter.hitMany(
      [
        { key: `facilitator-settle:payer:${payer}`, limit: settlePerPayer },
        { key: `facilitator-settle:pay-to:${payTo}`, limit: settlePerPayTo },
        ...owners.map((owner) => ({ key: `facilitator-settle:owner:${owner}`, limit: settlePerOwner })),
      ],
      windowSeconds,
    );
    // Anyone may register a merchant at any payTo: one owner over budget must not block the others, so the
    // owners' budget is spent only when every owner of the payTo has spent theirs.
    const ownersSpent = byOwner.length > 0 && byOwner.every((h) => !h.allowed);
    const refused = [
      !byPayer!.allowed && { what: `payer ${payer}`, retryAfter: byPayer!.retryAfterSeconds },
      !byPayTo!.allowed && { what: `payTo ${payTo}`, retryAfter: byPayTo!.retryAfterSeconds },
      ownersSpent && { what: `the owners of payTo ${payTo}`, retryAfter: Math.min(...byOwner.map((h) => h.retryAfterSeconds)) },
    ].filter((r): r is { what: string; retryAfter: number } => r !== false);
    if (refused.length > 0) {
      const retryAfter = Math.max(...refused.map((r) => r.retryAfter));
      throw new ApiError(429, 'rate_limited', `Too many settles for ${refused[0]!.what} in this window; nothing was sent`, undefined, { 'retry-after': String(retryAfter) });
    }
  }
}
