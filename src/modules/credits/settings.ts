import { address, defineSettings, positiveInt } from '../../platform/settings.js';

export interface CreditsConfig {
  credits: {
    /** Where top-up payments go; unset: a dev receiver key in the data dir on the devchain, else top-ups are unavailable. */
    payTo: string | null;
    /** A settling top-up younger than this belongs to a live request; the worker leaves it alone. */
    reconcileAfterSeconds: number;
    /** How often the worker looks for top-ups left settling. */
    sweepIntervalMs: number;
  };
}

export const creditsSettings = defineSettings({
  env: {
    CREDITS_PAY_TO: address,
    CREDITS_RECONCILE_AFTER_SECONDS: positiveInt(60),
    CREDITS_SWEEP_INTERVAL_MS: positiveInt(15_000),
  },
  load: (e): CreditsConfig => ({
    credits: { payTo: e.CREDITS_PAY_TO ?? null, reconcileAfterSeconds: e.CREDITS_RECONCILE_AFTER_SECONDS, sweepIntervalMs: e.CREDITS_SWEEP_INTERVAL_MS },
  }),
});
