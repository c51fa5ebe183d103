import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { devReceiver } from '../../chain/dev-receiver.js';
import { AdminCommandError } from '../../admin/errors.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { sendIdempotent } from '../../platform/http/idempotent.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../platform/http/schemas.js';
import { callerOf } from '../../platform/request-context.js';
import { paymentRequiredSchema } from '../../x402/schemas.js';
import { toApiError } from '../../x402/server/service.js';
import type { Module } from '../module.js';
import { parseGrantArgs } from './grant-args.js';
import { TopUpReconciler, topUpReconcileLoop } from './reconcile.js';
import { balanceSchema, ledgerEntrySchema, ledgerQuery, LEDGER_PAGE, topUpBody, topUpResult } from './schemas.js';
import { CreditsService } from './service.js';
import { TopUpService } from './top-up.js';

declare module '../../context.js' {
  interface Services {
    /** Users' credits: balance, grants, and spending inside another module's transaction. */
    credits: CreditsService;
  }
}


/** Where top-up payments go: CREDITS_PAY_TO, or on the devchain a receiver key kept in the data dir. */
function payToOf(ctx: AppContext): string | null {
  if (ctx.config.credits.payTo) return ctx.config.credits.payTo;
  return ctx.chain.devchain ? devReceiver(ctx.config.dataDir, 'credits-receiver-key') : null;
}

/** Credits (extension paths, docs/agents.md): balance, x402 top-ups, operator grants, and the top-up reconciler. */
export function creditsModule(ctx: AppContext): Module {
  const service = new CreditsService(ctx);
  ctx.services.credits = service;
  const topUps = new TopUpService(ctx, service.store, payToOf(ctx));
  const reconciler = new TopUpReconciler(ctx, service.store, topUps);
  const signedIn = ctx.auth.guard(['identity']);
  const security = [{ bearer: [] }];
  const tags = ['credits'];

  return {
    name: 'credits',
    adminCommands: {
      'credits.grant': async (args) => {
        const grant = parseGrantArgs(args);
        if ('refused' in grant) throw new AdminCommandError(grant.refused);
        const moved = await service.grant(grant.sub, grant.cents, grant.note);
        return { sub: grant.sub, grantedUsdCents: grant.cents, balanceUsdCents: moved.balanceCents, transferId: moved.transferId };
      },
    },
    loops: [topUpReconcileLoop(reconciler, ctx.config.credits.sweepIntervalMs)],
    routes: {
      api: (app) => {
        app.get(
          '/credits',
          { onRequest: signedIn, schema: { tags, summary: "The signed-in user's credits balance (US cents)", security, response: { 200: envelopeSchema(balanceSchema), ...errors(401) } } },
          async (request) => envelope({ balanceUsdCents: await service.balance(principalOf(request, 'identity').userId) }),
        );
        app.get(
          '/credits/ledger',
          {
            onRequest: signedIn,
            schema: {
              tags,
              summary: "The signed-in user's credit movements, newest first, each with the balance after it",
              description:
                'amountUsdCents is signed (+ into your account, − out of it); cause is { kind: purchase | renewal | top_up | grant | refund, id } with the agent, ' +
                `the top-up or the refunded entry's id (null for a grant). Paging: limit (${LEDGER_PAGE.min}–${LEDGER_PAGE.max}, default ${LEDGER_PAGE.default}) and before ` +
                "(the previous page's last entry id); a before that is not one of your entries is 400.",
              security,
              querystring: ledgerQuery,
              response: { 200: envelopeSchema(z.array(ledgerEntrySchema)), ...errors(400, 401) },
            },
          },
          async (request) => envelope(await service.ledger(principalOf(request, 'identity').userId, request.query.limit, request.query.before ?? null)),
        );
        app.post(
          '/credits/top-up',
          {
            onRequest: signedIn,
            schema: {
              tags,
              summary: 'Buy credits with an x402 payment in USDG (extension)',
              description:
                'Without PAYMENT-SIGNATURE: 402 with the x402 challenge for amountUsdCents × 10,000 atomic USDG. With it: settle, then credit once; ' +
                '200 with the top-up, the balance after, and PAYMENT-RESPONSE. Sending the same payment again answers the same top-up and credits nothing.',
              security,
              body: topUpBody,
              response: { 200: envelopeSchema(topUpResult), 402: paymentRequiredSchema, ...errors(400, 401, 409, 503) },
            },
          },
          async (request, reply) => {
            let payment;
            try {
              payment = ctx.x402.readPayment(request);
            } catch (error) {
              throw toApiError(error);
            }
            const userId = principalOf(request, 'identity').userId;
            // With an Idempotency-Key the top-up takes the key's stable id: a repeat signed anew credits nothing more.
            return sendIdempotent(ctx.idempotency, request, reply, 'credits.top-up', async (attempt) => {
              const answer = await topUps.topUp(userId, request.body.amountUsdCents, payment, attempt?.id, callerOf(request));
              const headers: Record<string, string> = { 'cache-control': 'no-store' };
              if (answer.settlement) headers['payment-response'] = headers['x-payment-response'] = ctx.x402.encodePaymentResponse(answer.settlement);
              if (answer.status === 402) {
                headers['payment-required'] = ctx.x402.encodePaymentRequired(answer.paymentRequired);
                return { status: 402, body: answer.paymentRequired, headers };
              }
              return { status: 200, body: envelope({ topUp: answer.topUp, balanceUsdCents: answer.balanceUsdCents }), headers };
            });
          },
        );
      },
    },
  };
}
