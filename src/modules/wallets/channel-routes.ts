import type { preHandlerAsyncHookHandler } from 'fastify';
import type { Hex } from 'viem';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { notFound } from '../../platform/http/errors.js';
import { requireIdempotencyKey, sendIdempotent } from '../../platform/http/idempotent.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../platform/http/schemas.js';
import { callerOf, type Caller } from '../../platform/request-context.js';
import { readChannel, type ChannelState } from '../../x402/facilitator/batch/chain.js';
import type { ZodApp } from '../module.js';
import type { ChannelClose } from './channel-close.js';
import { channelParams, channelSchema, closeChannelResult, openChannelApproval, openChannelBody, openChannelResult, topUpChannelBody, type ChannelView } from './channel-schemas.js';
import { ChannelStore, type ChannelRow } from './channel-store.js';
import type { PayAndCall } from './pay-and-call.js';
import type { WalletsService } from './service.js';

const tags = ['wallets'];
const security = [{ bearer: [] }];
const MONEY = 'it deposits into a channel or refunds one, and a repeat must not do it twice';

/** A wallet's x402 batch-settlement channels (extension; docs/wallets.md "Channels"). */
export function channelRoutes(app: ZodApp, deps: { ctx: AppContext; walletCredential: preHandlerAsyncHookHandler; wallets: WalletsService; payAndCall: PayAndCall; close: ChannelClose }) {
  const { ctx, walletCredential, wallets, payAndCall, close } = deps;
  const store = new ChannelStore(ctx.db);
  const view = async (row: ChannelRow) => channelView(row, await readChannel(ctx.chain.publicClient, row.channelId as Hex).catch(() => null));
  const ownChannel = async (walletId: string, id: string) => {
    const row = await store.ofWallet(walletId, id);
    if (!row) throw notFound('No channel of this wallet has that id', 'channel_not_found');
    return row;
  };
  /** Open and top-up are pay-and-calls that deposit: the channel they paid on is in the answer. */
  const deposit = async (walletId: string, credentialId: string, input: Parameters<PayAndCall['run']>[2], amount: bigint, paymentId: string | undefined, caller: Caller) => {
    const result = await payAndCall.run(await wallets.payingWallet(walletId), credentialId, input, { paymentId, deposit: amount, caller });
    if ('approval' in result) return { status: 202, body: envelope(result) };
    return { status: 200, body: envelope({ ...result, channel: await view(result.channel!) }) };
  };

  app.get(
    '/v1/wallets/me/channels',
    { onRequest: walletCredential, schema: { tags, summary: "The wallet's batch-settlement channels, newest first, with the chain's view (extension)", security, response: { 200: envelopeSchema(z.array(channelSchema)), ...errors(401) } } },
    async (request) => envelope(await Promise.all((await store.list(principalOf(request, 'wallet').walletId)).map(view))),
  );
  app.get(
    '/v1/wallets/me/channels/:channelId',
    { onRequest: walletCredential, schema: { tags, summary: 'One channel of the wallet (extension)', security, params: channelParams, response: { 200: envelopeSchema(channelSchema), ...errors(401, 404) } } },
    async (request) => envelope(await view(await ownChannel(principalOf(request, 'wallet').walletId, request.params.channelId))),
  );
  app.post(
    '/v1/wallets/me/channels',
    {
      onRequest: walletCredential,
      config: { audit: { action: 'wallet.channel-open' } },
      schema: {
        tags,
        summary: 'Open (or add to) the channel with a batch-settlement seller: a paid call that deposits `deposit` (extension)',
        description:
          "Calls `url` like pay-and-call and pays its batch-settlement requirement with a deposit of `deposit` plus the voucher of this call (the protocol's deposits travel with a paid request; the seller's facilitator sends the deposit). Idempotency-Key required. 200 `{ channel, upstream, payment }`; 202 approval; 400 invalid body, deposit below what the call needs, no batch-settlement requirement within maxPayment; 409 policy refusals, `channel_busy`; 502 the seller refused.",
        security,
        body: openChannelBody,
        response: { 200: envelopeSchema(openChannelResult), 202: envelopeSchema(openChannelApproval), ...errors(400, 401, 409, 413, 502, 504) },
      },
    },
    async (request, reply) => {
      requireIdempotencyKey(request, MONEY);
      const principal = principalOf(request, 'wallet');
      const { deposit: amount, ...input } = request.body;
      return sendIdempotent(ctx.idempotency, request, reply, 'wallets.channel-open', (attempt) => deposit(principal.walletId, principal.credentialId, input, BigInt(amount), attempt?.id, callerOf(request)));
    },
  );
  app.post(
    '/v1/wallets/me/channels/:channelId/deposits',
    {
      onRequest: walletCredential,
      config: { audit: { action: 'wallet.channel-top-up' } },
      schema: {
        tags,
        summary: "Top a channel up: another deposit, with one call's voucher at the resource it was opened at (extension)",
        description: 'Idempotency-Key required. 200 `{ channel, upstream, payment }`; 202 approval; 400 invalid body or a deposit below what the voucher needs; 404 not a channel of this wallet; 409 policy refusals, `channel_busy`; 502 the seller refused. A closed channel is opened again by a top-up.',
        security,
        params: channelParams,
        body: topUpChannelBody,
        response: { 200: envelopeSchema(openChannelResult), 202: envelopeSchema(openChannelApproval), ...errors(400, 401, 404, 409, 502, 504) },
      },
    },
    async (request, reply) => {
      requireIdempotencyKey(request, MONEY);
      const principal = principalOf(request, 'wallet');
      const channel = await ownChannel(principal.walletId, request.params.channelId);
      const input = { url: channel.url, method: 'GET' as const, maxPayment: request.body.maxPayment };
      return sendIdempotent(ctx.idempotency, request, reply, 'wallets.channel-top-up', (attempt) => deposit(principal.walletId, principal.credentialId, input, BigInt(request.body.deposit), attempt?.id, callerOf(request)));
    },
  );
  app.post(
    '/v1/wallets/me/channels/:channelId/close',
    {
      onRequest: walletCredential,
      config: { audit: { action: 'wallet.channel-close' } },
      schema: {
        tags,
        summary: "Close a channel: the seller's cooperative refund of what vouchers did not pay (extension)",
        description: "Idempotency-Key required. 200 `{ channel, refunded, transaction }` (the seller claims what it charged and returns the rest in one transaction); 404 not a channel of this wallet; 409 `channel_closed`, `channel_busy`; 502 `refund_failed` (the seller refused or did not answer: nothing changed).",
        security,
        params: channelParams,
        response: { 200: envelopeSchema(closeChannelResult), ...errors(400, 401, 404, 409, 502) },
      },
    },
    async (request, reply) => {
      requireIdempotencyKey(request, MONEY);
      const principal = principalOf(request, 'wallet');
      const channel = await ownChannel(principal.walletId, request.params.channelId);
      return sendIdempotent(ctx.idempotency, request, reply, 'wallets.channel-close', async () => {
        const closed = await close.run(await wallets.payingWallet(principal.walletId), channel);
        return { status: 200, body: envelope({ channel: channelView(closed.channel, closed.chain), refunded: closed.refunded, transaction: closed.transaction }) };
      });
    },
  );
}

function channelView(row: ChannelRow, chain: ChannelState | null): ChannelView {
  return {
    id: row.id,
    channelId: row.channelId,
    status: row.status as ChannelView['status'],
    network: row.network,
    asset: row.asset,
    payee: row.payee,
    receiverAuthorizer: row.receiverAuthorizer,
    url: row.url,
    withdrawDelay: row.withdrawDelay,
    deposited: row.balance ?? '0',
    paid: row.chargedCumulative,
    signedMax: row.signedMax,
    claimed: chain ? chain.totalClaimed.toString() : null,
    chainBalance: chain ? chain.balance.toString() : null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
