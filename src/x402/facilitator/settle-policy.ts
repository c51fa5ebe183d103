// What every settle through our facilitator engine must meet before the relayer pays gas for it, whatever
// door it came in by (the public /settle, the relay, payment intents, our paid endpoints, storage, credits):
// - at least the minimum amount (FACILITATOR_MIN_SETTLE_AMOUNT, in each registered asset's atomic units:
//   every asset here is a 6-decimal dollar) and a payer other than the payee: neither dust nor a payment to
//   oneself buys anything, and both cost us a transaction;
// - room in the payer's and the payTo's budgets (settles per window, counted in PostgreSQL and shared by
//   every node). A budget is spent only by a payment that verified and is about to be claimed, so a forged
//   payload naming someone else as payer cannot spend theirs, and a retry of a claimed payment spends none.
// The public origin adds its own rules on top (which payTo it serves, per merchant owner: modules/facilitator).
import type { PaymentRequirements } from '@x402/core/types';
import { getAddress, isAddress } from 'viem';
import type { RateLimiter } from '../../platform/rate-limiter.js';
import { Reason } from './reasons.js';

export interface SettlePolicyOptions {
  minSettleAmount: bigint;
  perPayer: number;
  perPayTo: number;
  windowSeconds: number;
}

export interface TermsRefusal {
  reason: string;
  message: string;
}

/** A budget is spent: nothing was sent; retry after `retryAfterSeconds`. */
export class SettleBudgetError extends Error {
  constructor(
    what: string,
    readonly retryAfterSeconds: number,
  ) {
    super(`Too many settles for ${what} in this window; nothing was sent`);
    this.name = 'SettleBudgetError';
  }
}

export class SettlePolicy {
  constructor(
    private readonly limiter: RateLimiter,
    readonly options: SettlePolicyOptions,
  ) {}

  /** The terms alone (no state): the minimum amount and payer ≠ payTo. Malformed fields are the scheme's to name. */
  terms(payer: string | undefined, requirements: PaymentRequirements): TermsRefusal | null {
    const minimum = this.options.minSettleAmount;
    // Zero is the scheme's to refuse (its own reason); dust above it is ours.
    if (/^\d+$/.test(requirements.amount) && BigInt(requirements.amount) > 0n && BigInt(requirements.amount) < minimum) {
      return { reason: Reason.invalidPaymentRequirements, message: `amount ${requirements.amount} is below this facilitator's minimum of ${minimum} atomic units` };
    }
    if (payer && isAddress(payer, { strict: false }) && isAddress(requirements.payTo, { strict: false }) && getAddress(payer) === getAddress(requirements.payTo)) {
      return { reason: Reason.invalidPaymentRequirements, message: 'the payer is the payee: a payment to oneself buys nothing, and this facilitator does not settle it' };
    }
    return null;
  }

  /** Spends one settle of the payer's and of the payTo's budgets, in one statement; throws SettleBudgetError when either is spent. */
  async charge(payer: string, payTo: string): Promise<void> {
    const { perPayer, perPayTo, windowSeconds } = this.options;
    const [byPayer, byPayTo] = await this.limiter.hitMany(
      [
        { key: `facilitator-settle:payer:${getAddress(payer)}`, limit: perPayer },
        { key: `facilitator-settle:pay-to:${getAddress(payTo)}`, limit: perPayTo },
      ],
      windowSeconds,
    );
    if (!byPayer!.allowed) throw new SettleBudgetError(`payer ${getAddress(payer)}`, byPayer!.retryAfterSeconds);
    if (!byPayTo!.allowed) throw new SettleBudgetError(`payTo ${getAddress(payTo)}`, byPayTo!.retryAfterSeconds);
  }
}
