import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { paymentChainOf, paymentRailOf } from '../../src/modules/intents/gateway.js';
import type { PaymentChain, PaymentRail } from '../../src/modules/intents/payments.js';
import type { SettleOutcome } from '../../src/x402/server/payment-steps.js';
import type { AppContext } from '../../src/context.js';
import type { IntentsModuleOptions } from '../../src/modules/intents/routes.js';

type SettleFault = (real: () => Promise<SettleOutcome>, payload: PaymentPayload, requirements: PaymentRequirements) => Promise<SettleOutcome>;

/**
 * Switchable faults around the real payment ports. Each armed fault fires once, for the next
 * settle, then the real behaviour returns; the chain stays down while set.
 */
export class Faults {
  private settleFault: SettleFault | null = null;
  private chainDown = false;

  /** The next settle runs `fault` instead (it may call the real settle first). */
  onNextSettle(fault: SettleFault): void {
    this.settleFault = fault;
  }

  /** The real settle runs (the transfer happens), then the process "crashes" before recording it. */
  crashAfterBroadcast(): void {
    this.onNextSettle(async (real) => {
      const outcome = await real();
      if (outcome.kind !== 'settled') throw new Error(`expected the injected settle to succeed, got ${outcome.kind}`);
      throw new Error('crash injected between broadcast and the intent update');
    });
  }

  setChainDown(down: boolean): void {
    this.chainDown = down;
  }

  options(): IntentsModuleOptions {
    return {
      rail: (ctx: AppContext): PaymentRail => {
        const real = paymentRailOf(ctx);
        return {
          ...real,
          settle: (payload, requirements, record) => {
            const fault = this.settleFault;
            this.settleFault = null;
            return fault ? fault(() => real.settle(payload, requirements, record), payload, requirements) : real.settle(payload, requirements, record);
          },
        };
      },
      chain: (ctx: AppContext): PaymentChain => {
        const real = paymentChainOf(ctx);
        const guard = <T>(read: () => Promise<T>) => {
          if (this.chainDown) return Promise.reject(new Error('chain unreachable (injected)'));
          return read();
        };
        return {
          outcome: (authorization) => guard(() => real.outcome(authorization)),
          claim: (authorization, hash, logIndex, record) => guard(() => real.claim(authorization, hash, logIndex, record)),
        };
      },
    };
  }
}
