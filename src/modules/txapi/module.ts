import { IndexedPayments } from '../../chain/indexer/payments.js';
import type { ModuleFactory } from '../module.js';
import { createTxapiModule } from './routes.js';

declare module '../../context.js' {
  interface Services {
    /** Read access to indexed payments (intent reconciliation): findByAuthorization, findByTransaction. */
    indexedPayments: IndexedPayments;
  }
}

/** The txapi module as the service registers it: indexes ctx.chain's asset for our facilitator's relayers. */
export const txapiModule: ModuleFactory = (ctx) => {
  ctx.services.indexedPayments = new IndexedPayments(ctx.db);
  return createTxapiModule(({ chain }) => ({
    client: chain.publicClient,
    chainId: chain.chainId,
    tokens: [chain.asset.address],
    signers: () => chain.facilitatorSigners(),
  }))(ctx);
};
