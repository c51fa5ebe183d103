import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { devReceiverBinding, sharedDevReceiver } from '../../chain/dev-receiver.js';
import { createKeySealer } from '../../platform/master-key.js';
import { devReceivers } from '../../platform/tables.js';
import { directErrorSchema } from '../../platform/http/schemas.js';
import type { PricedResource } from '../../x402/server/payment-steps.js';
import type { Module } from '../module.js';
import { paymentRequiredSchema, requirementSchema } from '../../x402/schemas.js';

/** 0.0001 USDG: the spec's price of the test endpoints. */
export const TEST_PRICE = '100';
/** 0.01 USDG: the most one call of /x402-test/metered may cost (its upto maximum). */
export const METERED_MAX = '10000';

/**
 * What one call of /x402-test/metered "used": a random share of the maximum, 1% to 100% in whole percents, drawn
 * from the payment's record id (random per payment), so a settle retried for the same payment asks the same amount.
 */
export const meteredUse = (maximum: bigint, recordId: string): bigint => (maximum * BigInt((createHash('sha256').update(recordId).digest().readUInt32BE(0) % 100) + 1)) / 100n;

/**
 * The paid test endpoints (api origin, direct family). Both answer 402 with an x402 challenge when
 * unpaid and settle before answering; /demo also shows what was required and how it settled.
 */
export async function x402TestModule(ctx: AppContext): Promise<Module> {
  // X402_TEST_PAY_TO, else the deployment's one dev receiver: every node of a cluster pays the same address.
  const sealer = createKeySealer(ctx.config);
  ctx.keyRotation.sealedColumn({ name: 'dev_receivers.sealed_key', table: devReceivers, key: [devReceivers.name], column: devReceivers.sealedKey, associatedData: (key) => devReceiverBinding(key.name!) });
  const payTo = ctx.config.x402TestPayTo ?? (await sharedDevReceiver({ db: ctx.db, dataDir: ctx.config.dataDir, sealer }, 'x402-test-receiver-key'));
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

        app.get(
          '/x402-test/metered',
          {
            schema: {
              tags: ['x402-test'],
              summary: 'Metered: pays the use (upto, at most 0.01 USDG) on eip155:4663',
              description:
                'Unpaid: 402 with an `upto` challenge (a Permit2 permit of at most 10000 atomic units, naming the facilitator ' +
                'that may settle it). Paid: the call "uses" a random share of the maximum (1% to 100%, drawn per payment), ' +
                'settles that much, and answers what was used and the settlement (its `amount` is what moved).',
              response: {
                200: z.object({
                  message: z.literal('metered'),
                  maximum: z.string(),
                  used: z.string(),
                  settlement: z.object({ success: z.boolean(), transaction: z.string(), network: z.string(), payer: z.string().optional(), amount: z.string().optional() }),
                  payer: z.string(),
                }),
                ...errors,
              },
            },
          },
          async (request, reply) => {
            const resource = { ...priced(ctx.x402.resourceUrl(request), 'x402 metered: pays a random share of the maximum'), amount: METERED_MAX };
            const result = await ctx.x402.chargeUsage(request, resource, meteredUse);
            if (!result.paid) return ctx.x402.sendPaymentRequired(reply, result.paymentRequired, result.settlement);
            ctx.x402.writePaymentResponse(reply, result.settlement);
            return { message: 'metered' as const, maximum: METERED_MAX, used: result.used, settlement: result.settlement, payer: result.payer };
          },
        );
      },
    },
  };
}
