import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../platform/http/schemas.js';
import type { Resolver } from '../../platform/safe-fetch.js';
import { callerOf, type Caller } from '../../platform/request-context.js';
import type { Module } from '../module.js';
import { walletAdminCommands } from './admin.js';
import { payAndCallFetch } from './fetcher.js';
import { sendIdempotent } from '../../platform/http/idempotent.js';
import { LocalKeystoreProvider } from './keystore.js';
import { loadMasterKey } from '../../platform/master-key.js';
import { PayAndCall, type SafeFetch } from './pay-and-call.js';
import { payAndCallApproval, payAndCallBody, payAndCallResult, paymentSchema, paymentsQuery, type PayAndCallInput, type PayAndCallResult, type PaymentView } from './pay-schemas.js';
import type { WalletProvider } from './provider.js';
import { Provisioner } from './provisioner.js';
import { authorizationValidity, signPayment, type SignedPayment } from './signing.js';
import { conflict } from '../../platform/http/errors.js';
import { PaymentReconciler } from './reconcile.js';
import { WalletTransfer, type TransferInput } from './transfer.js';
import { KeySealer } from '../../platform/sealing.js';
import { AwsKmsWalletProvider } from './kms-provider.js';
import { createCredentialBody, createdCredentialSchema, createWalletBody, createWalletResult, credentialParams, credentialSchema, walletIdParams, walletSchema } from './schemas.js';
import { WalletsService } from './service.js';
import { approvalEventSinkOf } from './approval-events.js';
import { balanceRoutes } from './balance-routes.js';
import { Permit2Approval } from './permit2-approval.js';
import { permit2ApprovalRoutes } from './permit2-approval-routes.js';
import { ChannelClose } from './channel-close.js';
import { channelRoutes } from './channel-routes.js';
import { policyRoutes } from './policy-routes.js';
import { WalletPolicies } from './policy-service.js';
import { SpendGuard, type CredentialCeiling } from './spend-guard.js';
import { WalletsStore } from './store.js';
import { paymentsReconcileLoop } from './worker.js';
import { walletCredentials, wallets as walletsTable } from './tables.js';

declare module '../../context.js' {
  interface Services {
    wallets: WalletsService;
    /** Spend policies, budgets and approvals of a wallet by id (other modules: the MCP server, the dashboard). */
    walletPolicies: WalletPolicies;
    /**
     * Pay-and-call from a wallet as its credential would (other modules: an agent's tool, the MCP server). `paymentId`
     * names the payment row it records before signing, so the caller can later tell whether anything was signed;
     * `ceiling` caps what the credential pays in all (an OAuth grant's); `caller`, the request that asked (its id goes upstream).
     */
    walletPayAndCall(walletId: string, credentialId: string, input: PayAndCallInput, options?: { paymentId?: string; ceiling?: CredentialCeiling; caller?: Caller }): Promise<PayAndCallResult>;
    /** Sends `amount` of the chain's asset from a wallet to `to` (other modules: an agent's withdrawal). */
    walletTransfer(walletId: string, credentialId: string, input: TransferInput, paymentId?: string, caller?: Caller): Promise<PaymentView>;
    /** Signs an x402 payment of exactly `requirement` with an active wallet's key (other modules: trading's metering). */
    walletSignPayment(walletId: string, challenge: PaymentRequired, requirement: PaymentRequirements): Promise<SignedPayment>;
  }
}

export interface WalletsModuleOptions {
  /** Wallet key provider; the local keystore under the master key by default. */
  provider?: WalletProvider;
  /** DNS resolver of pay-and-call's safeFetch (tests map names to private addresses). */
  resolve?: Resolver;
  /** Replaces pay-and-call's upstream client entirely (tests). */
  fetch?: SafeFetch;
}

/** How often open pay-and-call payments are checked on chain. */
const PAYMENTS_RECONCILE_INTERVAL_MS = 2_000;


export const createWalletsModule =
  (options: WalletsModuleOptions = {}) =>
  (ctx: AppContext): Module => {
    const provider = options.provider ?? configuredProvider(ctx);
    const provisioner = new Provisioner(ctx.db, provider, ctx.clock, ctx.log);
    const service = new WalletsService(ctx, provider, provisioner);
    const store = new WalletsStore(ctx.db);
    const reconciler = new PaymentReconciler(store, { network: ctx.chain.network, client: ctx.chain.publicClient }, ctx.clock, ctx.log);
    const paymentsLoop = paymentsReconcileLoop(store, reconciler, ctx.chain.network, ctx.clock, ctx.log, PAYMENTS_RECONCILE_INTERVAL_MS);
    const guard = new SpendGuard(ctx.db, ctx.clock, approvalEventSinkOf(ctx));
    const policies = new WalletPolicies(ctx, guard);
    const upstreamFetch = options.fetch ?? payAndCallFetch(ctx, options.resolve);
    const payAndCall = new PayAndCall(ctx, provider, upstreamFetch, reconciler, guard);
    const channelClose = new ChannelClose(ctx, provider, upstreamFetch, guard);
    ctx.services.wallets = service;
    ctx.services.walletPolicies = policies;
    ctx.services.walletPayAndCall = async (walletId, credentialId, input, options) => payAndCall.run(await service.payingWallet(walletId), credentialId, input, options);
    const transfer = new WalletTransfer(ctx, provider, reconciler);
    const permit2Approval = new Permit2Approval(ctx, provider);
    ctx.services.walletTransfer = async (walletId, credentialId, input, paymentId, caller) => transfer.run(await service.payingWallet(walletId), credentialId, input, paymentId, caller);
    ctx.services.walletSignPayment = async (walletId, challenge, requirement) => {
      const wallet = await service.payingWallet(walletId);
      if (wallet.status !== 'active' || !wallet.keyRef) throw conflict(`The wallet is ${wallet.status}; only an active wallet can pay`, 'wallet_not_active', { status: wallet.status });
      return signPayment(await provider.signer(wallet.id, wallet.keyRef), challenge, requirement, requirement.amount, authorizationValidity(ctx));
    };
    ctx.auth.register('wallet', service.resolveCredential);
    ctx.keyRotation.hashedColumn({ name: 'wallet_credentials.secret_hash', table: walletCredentials, key: [walletCredentials.id], column: walletCredentials.secretHash });
    // The local keystore's keys, sealed bound to their wallet (a KMS key reference is not sealed: left alone).
    ctx.keyRotation.sealedColumn({ name: 'wallets.key_ref', table: walletsTable, key: [walletsTable.id], column: walletsTable.keyRef, associatedData: (key) => key.id! });

    const mgmt = ctx.auth.guard(['mgmt']);
    const walletCredential = ctx.auth.guard(['wallet']);
    const security = [{ bearer: [] }];
    const tags = ['wallets'];
    // Room for the largest forwarded body after JSON escaping; the forwarded-size check answers 413 first.
    const payBodyLimit = ctx.config.payAndCall.maxBodyBytes * 6 + 64 * 1024;

    return {
      name: 'wallets',
      loops: [provisioner.loop, paymentsLoop],
      adminCommands: walletAdminCommands(service, paymentsLoop, payAndCall),
      // The chain confirmations pay-and-call started after answering end before the chain and the database close.
      close: () => payAndCall.close(),
      routes: {
        api: (app) => {
          policyRoutes(app, { mgmt, walletCredential, wallets: service, policies });
          balanceRoutes(app, { mgmt, wallets: service });
          permit2ApprovalRoutes(app, { ctx, walletCredential, wallets: service, approval: permit2Approval });
          channelRoutes(app, { ctx, walletCredential, wallets: service, payAndCall, close: channelClose });
          app.get(
            '/v1/wallets',
            { onRequest: mgmt, schema: { tags, summary: "List the application's wallets, newest first", security, response: { 200: envelopeSchema(z.array(walletSchema)), ...errors(401) } } },
            async (request) => envelope(await service.list(principalOf(request, 'mgmt').credentialId)),
          );
          app.post(
            '/v1/wallets',
            {
              onRequest: mgmt,
              config: { audit: { action: 'wallet.create', target: ({ answer }) => (answer as { data?: { wallet?: { id?: string } } } | null)?.data?.wallet?.id } },
              schema: {
                tags,
                summary: 'Create a wallet (idempotent by externalId); the first success returns its first credential',
                description: '201 with `created: true` and the credential secret (shown once); 200 with `created: false` and `credential: null` when the externalId exists with the same chainType; 409 when it exists with another chainType.',
                security,
                body: createWalletBody,
                response: { 200: envelopeSchema(createWalletResult), 201: envelopeSchema(createWalletResult), ...errors(400, 401, 409) },
              },
            },
            async (request, reply) => {
              const result = await service.create(principalOf(request, 'mgmt').credentialId, request.body);
              return reply.code(result.created ? 201 : 200).send(envelope(result));
            },
          );
          app.get(
            '/v1/wallets/me',
            { onRequest: walletCredential, schema: { tags, summary: "The wallet of the wallet credential (the management credential is refused)", security, response: { 200: envelopeSchema(walletSchema), ...errors(401) } } },
            async (request) => envelope(await service.me(principalOf(request, 'wallet').walletId)),
          );
          app.post(
            '/v1/wallets/me/pay-and-call',
            {
              onRequest: walletCredential,
              bodyLimit: payBodyLimit,
              schema: {
                tags,
                summary: 'Call an x402 resource and pay it from the wallet, within maxPayment',
                description:
                  'Pays only when every requirement of the upstream 402 matches maxPayment (same network and asset, amount ≤ maxPayment.amount), then the cheapest one it can sign (scheme exact by EIP-3009, upto by Permit2, batch-settlement by a voucher on the wallet\'s channel with the seller; maxTimeoutSeconds ≤ 3600). `payment.status` is `settled` only once the chain shows the transfer (`transaction` is the chain\'s); until then `pending` (the upstream claimed success; its receipt is in `settlement`) or `unknown`, and the reconciler ends it as `settled` or `failed`. Binary bodies come back as `{ encoding: "base64", data }` with `bodyEncoding: "base64"`. The spend policy of the wallet (extension) is checked, and the payment reserved, before anything is signed: 202 with `data.approval` when a human must approve it first (repeat the call with `approvalId` once approved). 400: invalid body, URL refused (SSRF) or requirements above maxPayment (offers in `data`); 409: wallet not active, or refused by the spend policy (`data.reason`, `data.rule`), or `approvalId` unusable; 413: forwarded body over PAY_AND_CALL_MAX_BODY_BYTES; 502: upstream failed, bad challenge, signing failed or payment rejected; 504: upstream timed out.',
                security,
                body: payAndCallBody,
                response: { 200: envelopeSchema(payAndCallResult), 202: envelopeSchema(payAndCallApproval), ...errors(400, 401, 409, 413, 502, 504) },
              },
            },
            async (request, reply) => {
              const principal = principalOf(request, 'wallet');
              // With an Idempotency-Key the payment takes the key's stable id: a repeat never pays twice.
              return sendIdempotent(ctx.idempotency, request, reply, 'wallets.pay-and-call', async (attempt) => {
                const wallet = await service.payingWallet(principal.walletId);
                const result = await payAndCall.run(wallet, principal.credentialId, request.body, { paymentId: attempt?.id, caller: callerOf(request) });
                return { status: 'approval' in result ? 202 : 200, body: envelope(result) };
              });
            },
          );
          app.get(
            '/v1/wallets/me/payments',
            { onRequest: walletCredential, schema: { tags, summary: "The wallet's pay-and-call payments, newest first (extension)", security, querystring: paymentsQuery, response: { 200: envelopeSchema(z.array(paymentSchema)), ...errors(400, 401) } } },
            async (request) => envelope(await service.payments(principalOf(request, 'wallet').walletId, request.query.limit, request.query.before)),
          );
          app.get(
            '/v1/wallets/:walletId',
            { onRequest: mgmt, schema: { tags, summary: 'Get a wallet of the application', security, params: walletIdParams, response: { 200: envelopeSchema(walletSchema), ...errors(401, 404) } } },
            async (request) => envelope(await service.get(principalOf(request, 'mgmt').credentialId, request.params.walletId)),
          );
          app.get(
            '/v1/wallets/:walletId/payments',
            {
              onRequest: mgmt,
              schema: {
                tags,
                summary: "A wallet's payments (pay-and-call and transfers), newest first: host, payTo, amount, status, transaction, request id (extension)",
                description: 'Page with `before` = the last payment id of the previous page; an empty page is the end.',
                security,
                params: walletIdParams,
                querystring: paymentsQuery,
                response: { 200: envelopeSchema(z.array(paymentSchema)), ...errors(400, 401, 404) },
              },
            },
            async (request) => {
              const wallet = await service.get(principalOf(request, 'mgmt').credentialId, request.params.walletId);
              return envelope(await service.payments(wallet.id, request.query.limit, request.query.before));
            },
          );
          app.get(
            '/v1/wallets/:walletId/credentials',
            { onRequest: mgmt, schema: { tags, summary: "The wallet's credentials, newest first (no secrets)", security, params: walletIdParams, response: { 200: envelopeSchema(z.array(credentialSchema)), ...errors(401, 404) } } },
            async (request) => envelope(await service.listCredentials(principalOf(request, 'mgmt').credentialId, request.params.walletId)),
          );
          app.post(
            '/v1/wallets/:walletId/credentials',
            {
              onRequest: mgmt,
              config: { audit: { action: 'wallet-credential.create' } },
              schema: { tags, summary: 'Create a wallet credential (secret shown once; the wallet must be active)', security, params: walletIdParams, body: createCredentialBody, response: { 201: envelopeSchema(createdCredentialSchema), ...errors(400, 401, 404, 409) } },
            },
            async (request, reply) =>
              reply.code(201).send(envelope(await service.createCredential(principalOf(request, 'mgmt').credentialId, request.params.walletId, request.body))),
          );
          app.delete(
            '/v1/wallets/:walletId/credentials/:credentialId',
            { onRequest: mgmt, config: { audit: { action: 'wallet-credential.revoke' } }, schema: { tags, summary: 'Revoke a wallet credential (immediate)', security, params: credentialParams, response: { 200: envelopeSchema(credentialSchema), ...errors(401, 404) } } },
            async (request) => envelope(await service.revokeCredential(principalOf(request, 'mgmt').credentialId, request.params.walletId, request.params.credentialId)),
          );
        },
      },
    };
  };

/** The module with its embedded defaults (local keystore, real DNS). */
export const walletsModule = createWalletsModule();

function configuredProvider(ctx: AppContext): WalletProvider {
  // WALLET_KEY_PROVIDER=aws-kms: keys created and used inside AWS KMS; the master key does not apply to them.
  if (ctx.config.walletKeys.provider === 'aws-kms') return new AwsKmsWalletProvider(ctx.config.walletKeys);
  const master = loadMasterKey(ctx.config);
  if (master.dev && ctx.config.databaseUrl) {
    ctx.log.warn('WALLET_MASTER_KEY is unset: wallet keys are sealed under the dev master key in the data dir');
  }
  return new LocalKeystoreProvider(new KeySealer(master.key, master.previous));
}
