import { defineSettings, positiveInt } from '../../platform/settings.js';

/** Payment intents: lifetime, the challenge's payment timeout, pay rate limits, reconciliation. */
export interface IntentSettings {
  lifetimeSeconds: number;
  payTimeoutSeconds: number;
  payLimits: { perIntent: number; perClient: number; windowSeconds: number };
  reconcile: { intervalMs: number; graceSeconds: number };
}

export const intentsSettings = defineSettings({
  env: {
    INTENT_LIFETIME_SECONDS: positiveInt(24 * 3600),
    INTENT_PAY_TIMEOUT_SECONDS: positiveInt(300),
    INTENT_PAY_LIMIT_PER_INTENT: positiveInt(30),
    INTENT_PAY_LIMIT_PER_CLIENT: positiveInt(120),
    INTENT_PAY_LIMIT_WINDOW_SECONDS: positiveInt(60),
    INTENT_RECONCILE_INTERVAL_MS: positiveInt(15_000),
    INTENT_RECONCILE_GRACE_SECONDS: positiveInt(60),
  },
  load: (e): { intents: IntentSettings } => ({
    intents: {
      lifetimeSeconds: e.INTENT_LIFETIME_SECONDS,
      payTimeoutSeconds: e.INTENT_PAY_TIMEOUT_SECONDS,
      payLimits: {
        perIntent: e.INTENT_PAY_LIMIT_PER_INTENT,
        perClient: e.INTENT_PAY_LIMIT_PER_CLIENT,
        windowSeconds: e.INTENT_PAY_LIMIT_WINDOW_SECONDS,
      },
      reconcile: { intervalMs: e.INTENT_RECONCILE_INTERVAL_MS, graceSeconds: e.INTENT_RECONCILE_GRACE_SECONDS },
    },
  }),
});
