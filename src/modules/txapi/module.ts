import { FacilitatorSignerRegistry } from '../../x402/signers.js';
import type { ModuleFactory } from '../module.js';
import { IndexedPayments } from './payments.js';
import { createTxapiModule } from './routes.js';

declare module '../../context.js' {
  interface Services {
    /** Read access to indexed payments (intent reconciliation): findByAuthorization, findByTransaction. */
    indexedPayments: IndexedPayments;
  }
}

/**
 * The txapi module as the service registers it: indexes ctx.chain's asset for every facilitator signer
 * registered by any node of the deployment (re-read each tick, so a node started later is followed
 * too). A worker needs no relayer key of its own.
 */
export const txapiModule: ModuleFactory = (ctx) => {
  ctx.services.indexedPayments = new IndexedPayments(ctx.db);
  const registry = new FacilitatorSignerRegistry(ctx.db, ctx.clock);
  return createTxapiModule(({ chain }) => ({
    client: chain.publicClient,
    chainId: chain.chainId,
    tokens: [chain.asset.address],
    signers: () => registry.list(chain.network),
  }))(ctx);
};
