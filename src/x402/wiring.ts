// Builds ctx.x402 and ctx.facilitator. Which facilitator a paid endpoint talks to:
// FACILITATOR_URL when set; else this process's facilitator directly when the facilitator role runs
// here; else HTTP to our own facilitator origin (PUBLIC_FACILITATOR_URL or its default port).
import type { Logger } from 'pino';
import type { ChainService } from '../chain/service.js';
import type { Config } from '../config.js';
import type { OriginName, Role } from '../platform/server-settings.js';
import type { Clock } from '../platform/clock.js';
import type { Db } from '../platform/db.js';
import type { Metrics } from '../platform/metrics.js';
import { Facilitator, type FacilitatorOptions } from './facilitator/facilitator.js';
import { SettlePolicy } from './facilitator/settle-policy.js';
import { RateLimiter } from '../platform/rate-limiter.js';
import { httpFacilitatorClient, localFacilitatorClient, type CallerFacilitatorClient } from './server/facilitator-clients.js';
import { PaymentUses } from '../chain/payment-uses.js';
import { PaidRequests } from './server/paid-requests.js';
import { X402Service } from './server/service.js';
import { facilitatorObserver, observedFacilitatorClient, registerRelayerMetrics, facilitatorClientDuration } from './metrics.js';

export interface X402Parts {
  x402: X402Service;
  facilitator: Facilitator | null;
}

export interface X402WiringDeps {
  config: Config;
  db: Db;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
  chain: ChainService;
  roles: readonly Role[];
  /** Live object: listeners fill in their addresses after the context is built. */
  urls: Record<OriginName, string>;
  /** The server pepper's keyed hash (payment-identifiers of our own settles). */
  keyedHash: (value: string) => string;
  /** The previous pepper's keyed hashes during a rotation (X402ServiceDeps.earlierKeyedHashes). */
  earlierKeyedHashes?: (value: string) => string[];
  facilitatorOptions?: FacilitatorOptions;
}

export const SERVICE_NAME = 'Tollgate';

export function createX402(deps: X402WiringDeps): X402Parts {
  const { config, chain } = deps;
  const facilitator =
    chain.relayers.length > 0
      ? new Facilitator(
          {
            db: deps.db,
            clock: deps.clock,
            log: deps.log.child({ component: 'facilitator' }),
            chain,
            relayer: chain.relayers,
            policy: new SettlePolicy(new RateLimiter(deps.db, deps.clock), {
              minSettleAmount: config.facilitatorLimits.minSettleAmount,
              perPayer: config.facilitatorLimits.settlePerPayer,
              perPayTo: config.facilitatorLimits.settlePerPayTo,
              windowSeconds: config.facilitatorLimits.windowSeconds,
            }),
          },
          {
            reconcileAfterMs: config.facilitatorReconcileAfterMs,
            confirmationTimeoutMs: config.facilitatorConfirmationTimeoutMs,
            replaceAfterMs: config.facilitatorReplacement.replaceAfterMs,
            maxReplacements: config.facilitatorReplacement.maxReplacements,
            batch: config.facilitatorBatch,
            lowGasWei: config.facilitatorLowGasWei,
            maxSettleGas: config.facilitatorGas.maxSettleGas,
            maxPermit2SettleGas: config.facilitatorGas.maxPermit2SettleGas,
            maxBatchSettlementGas: config.facilitatorGas.maxBatchSettlementGas,
            maxClaimGasPerVoucher: config.facilitatorGas.maxClaimGasPerVoucher,
            contractPayers: config.facilitatorGas.contractPayers,
            gasFloors: { publicWei: config.facilitatorGas.publicFloorWei, ownWei: config.facilitatorGas.floorWei },
            observer: facilitatorObserver(deps.metrics),
            ...deps.facilitatorOptions,
          },
        )
      : null;
  if (facilitator) registerRelayerMetrics(deps.metrics, facilitator);
  facilitatorClientDuration(deps.metrics);
  let client: CallerFacilitatorClient | null = null;
  const facilitatorClient = (): CallerFacilitatorClient => {
    if (client) return client;
    if (!config.facilitatorUrl && facilitator && deps.roles.includes('facilitator')) {
      client = observedFacilitatorClient(localFacilitatorClient(facilitator), deps.metrics, 'local');
    } else {
      const url = config.facilitatorUrl;
      client = observedFacilitatorClient(httpFacilitatorClient({ url: () => url ?? deps.urls.facilitator }), deps.metrics, 'http');
    }
    return client;
  };
  const x402 = new X402Service({
    network: chain.network,
    asset: chain.asset,
    serviceName: SERVICE_NAME,
    apiBaseUrl: () => deps.urls.api,
    facilitator: facilitatorClient,
    keyedHash: deps.keyedHash,
    earlierKeyedHashes: deps.earlierKeyedHashes,
    records: { purchases: new PaidRequests(deps.db, deps.clock), client: chain.publicClient, uses: new PaymentUses(deps.db) },
  });
  return { x402, facilitator };
}
