import { z } from 'zod';
import { defineSettings, positiveInt } from '../../platform/settings.js';

export interface WalletsConfig {
  /** Pay-and-call (docs/wallets.md): hosts reachable over http and on private addresses, body and time limits. */
  payAndCall: {
    allowHosts: string;
    maxBodyBytes: number;
    timeoutMs: number;
    /** A signed authorization is valid for at most this long from the chain's time (or the seller's maxTimeoutSeconds if shorter). */
    authorizationSeconds: number;
  };
}

// The wallets' keys (WALLET_MASTER_KEY, WALLET_KEY_PROVIDER, AWS_*) are platform/keys-settings.ts: the facilitator's KMS relayers share them.
export const walletsSettings = defineSettings({
  env: {
    PAY_AND_CALL_ALLOW_HOSTS: z.string().optional(),
    PAY_AND_CALL_MAX_BODY_BYTES: positiveInt(1024 * 1024),
    PAY_AND_CALL_TIMEOUT_MS: positiveInt(15_000),
    PAY_AND_CALL_AUTHORIZATION_SECONDS: z.coerce.number().int().min(10).max(3600).default(120),
  },
  load: (e): WalletsConfig => ({
    payAndCall: {
      allowHosts: e.PAY_AND_CALL_ALLOW_HOSTS ?? '',
      maxBodyBytes: e.PAY_AND_CALL_MAX_BODY_BYTES,
      timeoutMs: e.PAY_AND_CALL_TIMEOUT_MS,
      authorizationSeconds: e.PAY_AND_CALL_AUTHORIZATION_SECONDS,
    },
  }),
});
