import { z } from 'zod';
import type { Address, Client } from 'viem';
import { ChainIndexer } from '../../chain/indexer/indexer.js';
import { DEFAULT_NETWORK } from '../../chain/registry.js';
import type { AppContext } from '../../context.js';
import { directErrorSchema } from '../../platform/http/schemas.js';
import type { Module, ModuleFactory, ZodApp } from '../module.js';
import { AttestationSigner } from './attestation.js';
import { loadAttestationKey } from './keys.js';
import { PaymentIndexStore } from './index-store.js';
import { Publisher } from './publisher.js';
import {
  attestationInfoSchema,
  attestationQuerySchema,
  listQuerySchema,
  paymentIdParams,
  transactionRecordSchema,
} from './schemas.js';
import { TransactionService } from './service.js';
import { indexerLoop } from './worker.js';
import { registerIndexerMetrics } from './metrics.js';

/** The chain the indexer follows; null serves the API over whatever is already indexed. */
export interface TxapiChain {
  client: Client;
  chainId: number;
  tokens: readonly Address[];
  signers: () => readonly Address[] | Promise<readonly Address[]>;
}

const errors = { 400: directErrorSchema, 404: directErrorSchema };

/** Transaction API (public, direct objects) and, in the worker role, the chain indexer loop. */
export function createTxapiModule(resolveChain: (ctx: AppContext) => TxapiChain | null): ModuleFactory {
  return (ctx) => {
    const chain = resolveChain(ctx);
    const signer = new AttestationSigner(loadAttestationKey(ctx.config, ctx.log));
    const primaryChainId = chain?.chainId ?? DEFAULT_NETWORK.chainId;
    const service = new TransactionService({ db: ctx.db, primaryChainId, indexedChainIds: [primaryChainId], signer: signer.address });
    const module: Module = { name: 'txapi', routes: { api: (app) => routes(app, service) } };
    if (chain) {
      const store = new PaymentIndexStore(ctx.db);
      registerIndexerMetrics(ctx.metrics, store, chain.client, chain.chainId);
      const indexer = new ChainIndexer({
        sink: store,
        client: chain.client,
        chainId: chain.chainId,
        tokens: chain.tokens,
        signers: chain.signers,
        confirmations: ctx.config.txapi.confirmations,
        startBlock: ctx.config.txapi.startBlock,
        maxBlocksPerTick: ctx.config.txapi.batchBlocks,
        clock: ctx.clock,
        log: ctx.log.child({ component: 'chain-indexer' }),
      });
      module.loops = [indexerLoop(indexer, new Publisher(ctx.db, signer, ctx.clock), ctx.config.txapi.pollMs)];
    }
    return module;
  };
}

function routes(app: ZodApp, service: TransactionService) {
  const tags = ['transactions'];
  app.get(
    '/x402scan/transactions',
    {
      // Validated again in the service, which also checks the rules between parameters and
      // answers with a message naming every bad one.
      attachValidation: true,
      schema: {
        tags,
        summary: 'Indexed payments: newest first (paged, or after a record with before), after a recipientSequence cursor, or those of one transaction',
        querystring: listQuerySchema,
        response: { 200: z.array(transactionRecordSchema), ...errors },
      },
    },
    async (request) => service.list(request.query),
  );
  app.get(
    '/x402scan/transactions/:paymentId',
    {
      attachValidation: true,
      schema: { tags, summary: 'One indexed payment by paymentId', params: paymentIdParams, response: { 200: transactionRecordSchema, ...errors } },
    },
    async (request) => service.get(request.params.paymentId),
  );
  app.get(
    '/x402scan/attestation',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'EIP-712 domain, types and signer of the payment attestations',
        querystring: attestationQuerySchema,
        response: { 200: attestationInfoSchema, 400: directErrorSchema },
      },
    },
    async (request) => service.attestationInfo(request.query),
  );
}
