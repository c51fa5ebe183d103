import { defineSettings, positiveInt } from '../../platform/settings.js';

export interface RelayConfig {
  /**
   * The payment relay. Broadcast idempotency records: kept this long, at most this many per payer, and when
   * a lost one is taken over. Limits per client address (fixed windows of windowSeconds): broadcasts counted
   * in PostgreSQL (each may spend our relayer's gas), validates in each node's memory.
   */
  relay: {
    retentionSeconds: number;
    capacityPerPayer: number;
    takeoverAfterSeconds: number;
    limits: { broadcastPerClient: number; validatePerClient: number; windowSeconds: number };
  };
}

export const relaySettings = defineSettings({
  env: {
    RELAY_IDEMPOTENCY_RETENTION_HOURS: positiveInt(72),
    RELAY_IDEMPOTENCY_CAPACITY_PER_PAYER: positiveInt(100_000),
    RELAY_BROADCAST_LIMIT_PER_CLIENT: positiveInt(600),
    RELAY_VALIDATE_LIMIT_PER_CLIENT: positiveInt(6000),
    RELAY_LIMIT_WINDOW_SECONDS: positiveInt(60),
    RELAY_TAKEOVER_AFTER_SECONDS: positiveInt(180),
  },
  load: (e): RelayConfig => ({
    relay: {
      retentionSeconds: e.RELAY_IDEMPOTENCY_RETENTION_HOURS * 3600,
      capacityPerPayer: e.RELAY_IDEMPOTENCY_CAPACITY_PER_PAYER,
      takeoverAfterSeconds: e.RELAY_TAKEOVER_AFTER_SECONDS,
      limits: { broadcastPerClient: e.RELAY_BROADCAST_LIMIT_PER_CLIENT, validatePerClient: e.RELAY_VALIDATE_LIMIT_PER_CLIENT, windowSeconds: e.RELAY_LIMIT_WINDOW_SECONDS },
    },
  }),
});
