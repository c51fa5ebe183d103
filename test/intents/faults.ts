import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { paymentIndexOf, paymentRailOf } from '../../src/modules/intents/gateway.js';
import type { PaymentIndex, PaymentRail, SettleOutcome } from '../../src/modules/intents/payments.js';
import type { AppContext } from '../../src/context.js';
import type { IntentsModuleOptions } from '../../src/modules/intents/routes.js';

type SettleFault = (real: () => Promise<SettleOutcome>, payload: PaymentPayload, requirements: PaymentRequirements) => Promise<SettleOutcome>;

/**
 * Switchable faults around the real payment ports. Each armed fault fires once, for the next
 * settle (or index read), then the real behaviour returns.
 */
export class Faults {
  private settleFault: SettleFault | null = null;
  private indexDown = false;

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

  setIndexDown(down: boolean): void {
    this.indexDown = down;
  }

  options(): IntentsModuleOptions {
    return {
      rail: (ctx: AppContext): PaymentRail => {
        const real = paymentRailOf(ctx);
        return {
          ...real,
          settle: (payload, requirements) => {
            const fault = this.settleFault;
            this.settleFault = null;
            return fault ? fault(() => real.settle(payload, requirements), payload, requirements) : real.settle(payload, requirements);
          },
        };
      },
      index: (ctx: AppContext): PaymentIndex => {
        const real = paymentIndexOf(ctx);
        const guard = <T>(read: () => Promise<T>) => {
          if (this.indexDown) return Promise.reject(new Error('index unreachable (injected)'));
          return read();
        };
        return {
          findByAuthorization: (key) => guard(() => real.findByAuthorization(key)),
          authorizationState: (key) => guard(() => real.authorizationState(key)),
        };
      },
    };
  }
}
