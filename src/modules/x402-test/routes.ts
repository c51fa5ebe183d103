import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { devReceiver } from '../../chain/dev-receiver.js';
import { directErrorSchema } from '../../platform/http/schemas.js';
import type { PricedResource } from '../../x402/server/service.js';
import type { Module } from '../module.js';
import { paymentRequiredSchema, requirementSchema } from '../../x402/schemas.js';

/** 0.0001 USDG: the spec's price of the test endpoints. */
export const TEST_PRICE = '100';

/**
 * The paid test endpoints (api origin, direct family). Both answer 402 with an x402 challenge when
 * unpaid and settle before answering; /demo also shows what was required and how it settled.
 */
export function x402TestModule(ctx: AppContext): Module {
  const payTo = ctx.config.x402TestPayTo ?? devReceiver(ctx.config.dataDir, 'x402-test-receiver-key');
  const priced = (url: string, description: string): PricedResource => ({
    url,
    description,
    mimeType: 'application/json',
    amount: TEST_PRICE,
    payTo,
  });
  const errors = { 400: directErrorSchema, 402: paymentRequiredSchema, 503: directErrorSchema };

  return {
    name: 'x402-test',
    routes: {
      api: (app) => {
        app.get(
          '/x402-test/ping',
          {
            schema: {
              tags: ['x402-test'],
              summary: 'Paid ping: 0.0001 USDG on eip155:4663',
              response: { 200: z.object({ message: z.literal('paid pong') }), ...errors },
            },
          },
          async (request, reply) => {
            const result = await ctx.x402.charge(request, priced(ctx.x402.resourceUrl(request), 'x402 test ping'));
            if (!result.paid) return ctx.x402.sendPaymentRequired(reply, result.paymentRequired, result.settlement);
            ctx.x402.writePaymentResponse(reply, result.settlement);
            return { message: 'paid pong' as const };
          },
        );

        app.get(
          '/x402-test/demo',
          {
            schema: {
              tags: ['x402-test'],
              summary: 'Paid demo: the payment requirement and the settlement result',
              description:
                'Unpaid: 402 with the x402 challenge (its `accepts[0]` is the requirement). Paid: 200 with the ' +
                'requirement that was met, the settlement result (as in PAYMENT-RESPONSE) and the payer.',
              response: {
                200: z.object({
                  message: z.literal('paid demo'),
                  requirement: requirementSchema,
                  settlement: z.object({ success: z.boolean(), transaction: z.string(), network: z.string(), payer: z.string().optional() }),
                  payer: z.string(),
                }),
                ...errors,
              },
            },
          },
          async (request, reply) => {
            const result = await ctx.x402.charge(request, priced(ctx.x402.resourceUrl(request), 'x402 demo: see the requirement and the settlement'));
            if (!result.paid) return ctx.x402.sendPaymentRequired(reply, result.paymentRequired, result.settlement);
            ctx.x402.writePaymentResponse(reply, result.settlement);
            return {
              message: 'paid demo' as const,
              requirement: result.requirements as z.infer<typeof requirementSchema>,
              settlement: result.settlement,
              payer: result.payer,
            };
          },
        );
      },
    },
  };
}
