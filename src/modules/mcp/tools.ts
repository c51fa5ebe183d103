import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import type { PrincipalOf } from '../../platform/auth/principal.js';
import { callerOf } from '../../platform/request-context.js';
import { ceilingSchema } from '../oauth/schemas.js';
import { payAndCallBody, payAndCallResult, paymentSchema, paymentsQuery } from '../wallets/pay-schemas.js';
import { approvalSchema, budgetLimitSchema, policySchema } from '../wallets/policy-schemas.js';
import { walletSchema } from '../wallets/schemas.js';
import { answered, refused, toolOutput } from './results.js';

// The wallet's tools: thin adapters over the services the wallet routes call (same rules, same policy, same
// answers), each registered with its input and output schemas beside its handler. The wallet is always the
// credential's own: no tool takes a wallet id. Connected through OAuth, the grant's ceiling caps every payment too.

const balanceSchema = z.object({
  network: z.string(),
  asset: z.string().describe('ERC-20 contract address'),
  symbol: z.string(),
  decimals: z.number().int(),
  amount: z.string().describe('atomic units, as the chain reads it now'),
});
const walletResult = walletSchema.extend({ balance: balanceSchema.nullable().describe('null while the wallet has no address') });
const budgetResult = z.object({
  budget: z.array(budgetLimitSchema).describe('per limit of the policy, in its rolling window'),
  policy: policySchema,
  ceiling: ceilingSchema.optional().describe('connected through OAuth: what the grant may still pay in all (its owner set it when connecting you)'),
});
const approvalPending = z.object({ status: z.literal('approval_pending'), approval: approvalSchema });
const paymentsResult = z.object({ payments: z.array(paymentSchema) });

// The HTTP route takes the key as a header; a tool call has only arguments.
const payAndCallInput = payAndCallBody.extend({
  idempotencyKey: z
    .string()
    .regex(/^[\x21-\x7e]{8,200}$/, '8 to 200 printable ASCII characters')
    .optional()
    .describe(
      'Pass one (a fresh UUID per intended payment) and reuse it when you retry this same call after a timeout or error: ' +
        'a retry with the same key and arguments answers the first result and never pays twice.',
    ),
});

const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/** `request`: the MCP request these tools serve (its logger for failures, its id for pay-and-call's upstream). */
export function registerWalletTools(server: McpServer, ctx: AppContext, principal: PrincipalOf<'wallet' | 'oauth'>, request: FastifyRequest): void {
  const { walletId, credentialId } = principal;
  const ceiling = principal.kind === 'oauth' ? principal.ceiling : undefined;
  const { wallets, walletPolicies } = ctx.services;
  const run = async (work: () => Promise<CallToolResult>): Promise<CallToolResult> => {
    try {
      return await work();
    } catch (error) {
      return refused(error, request.log);
    }
  };

  server.registerTool(
    'get_wallet',
    {
      title: 'Get wallet',
      description: "This wallet: its address, status and USDG balance (atomic units; `decimals` places) read from the chain now.",
      inputSchema: z.object({}),
      outputSchema: toolOutput(walletResult),
      annotations: readOnly,
    },
    () =>
      run(async () => {
        const [wallet, balance] = await Promise.all([wallets.me(walletId), wallets.balance(walletId)]);
        return answered({ ...wallet, balance });
      }),
  );

  server.registerTool(
    'get_budget',
    {
      title: 'Get budget',
      description:
        "The wallet's spend policy (read-only) and, per rolling limit, what is spent, reserved and remaining; connected through OAuth, also the grant's ceiling. A payment past a limit or the ceiling is refused.",
      inputSchema: z.object({}),
      outputSchema: toolOutput(budgetResult),
      annotations: readOnly,
    },
    () =>
      run(async () => {
        const [budget, policy, left] = await Promise.all([walletPolicies.budget(walletId), walletPolicies.policy(walletId), ceiling && walletPolicies.ceiling(walletId, credentialId, ceiling)]);
        return answered({ budget, policy, ...(left ? { ceiling: left } : {}) });
      }),
  );

  server.registerTool(
    'pay_and_call',
    {
      title: 'Pay and call',
      description:
        "Call an x402 resource and pay it from this wallet, within maxPayment and the wallet's spend policy (POST /v1/wallets/me/pay-and-call). " +
        'Answers `{ upstream, payment }` (payment null when nothing was asked). When a human must approve the payment first, answers ' +
        '`{ status: "approval_pending", approval }` with nothing signed: call again with the same arguments and `approvalId` once it is approved. ' +
        'A refusal is a tool error with `reason` (and `rule` for the policy): nothing was signed unless the error carries a `payment` (then its status says what the chain decided; do not pay again blindly).',
      inputSchema: payAndCallInput,
      outputSchema: toolOutput(payAndCallResult, approvalPending),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    },
    ({ idempotencyKey, ...input }) =>
      run(async () => {
        const pay = async (paymentId?: string) => ({ status: 200, body: await ctx.services.walletPayAndCall(walletId, credentialId, input, { paymentId, ceiling, caller: callerOf(request) }) });
        // Scoped to this wallet like the HTTP route's keys: the same key there is another request (409), never a second payment.
        const { body } = idempotencyKey
          ? await ctx.idempotency.run({ scope: `wallet:${walletId}`, key: idempotencyKey, operation: 'mcp.pay_and_call', request: input }, (attempt) => pay(attempt.id))
          : await pay();
        const result = body as Awaited<ReturnType<typeof ctx.services.walletPayAndCall>>;
        if (!('approval' in result)) return answered(result);
        const { approval } = result;
        return answered(
          { status: 'approval_pending', approval },
          `Nothing was paid: the wallet's policy asks a human to approve ${approval.amount} to ${approval.payTo} (approval ${approval.id}, until ${approval.expiresAt}). ` +
            `Once it is approved, call pay_and_call again with the same arguments and "approvalId": "${approval.id}".`,
        );
      }),
  );

  server.registerTool(
    'list_payments',
    {
      title: 'List payments',
      description: "The wallet's pay-and-call payments, newest first; `before` (a payment id) pages to older ones.",
      inputSchema: paymentsQuery,
      outputSchema: toolOutput(paymentsResult),
      annotations: readOnly,
    },
    ({ limit, before }) => run(async () => answered({ payments: await wallets.payments(walletId, limit, before) })),
  );
}
