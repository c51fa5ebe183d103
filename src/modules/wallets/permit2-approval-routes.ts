import type { preHandlerAsyncHookHandler } from 'fastify';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { requireIdempotencyKey, sendIdempotent } from '../../platform/http/idempotent.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../platform/http/schemas.js';
import type { ZodApp } from '../module.js';
import type { Permit2Approval } from './permit2-approval.js';
import { permit2ApprovalBody, permit2ApprovalSchema } from './schemas.js';
import type { WalletsService } from './service.js';

/** The wallet approves Permit2 for the chain's asset, so it can pay `upto` (extension; docs/wallets.md). */
export function permit2ApprovalRoutes(app: ZodApp, deps: { ctx: AppContext; walletCredential: preHandlerAsyncHookHandler; wallets: WalletsService; approval: Permit2Approval }) {
  const { ctx, walletCredential, wallets, approval } = deps;
  app.post(
    '/v1/wallets/me/permit2-approval',
    {
      onRequest: walletCredential,
      config: { audit: { action: 'wallet.permit2-approval' } },
      schema: {
        tags: ['wallets'],
        summary: "Approve Permit2 for the chain's asset from the wallet, so it can pay upto (extension)",
        description:
          "Sends `approve(Permit2, amount)` on the chain's asset from the wallet, which pays its gas in the chain's native coin (the gas limit is decided before sending, at most 100000). Idempotency-Key is required: a repeat with the same key answers the first answer and sends nothing. 200 `confirmed` (mined; `allowance` read after it) or `unchanged` (the allowance already was `amount`, nothing sent); 202 `pending` (sent, not seen mined within 30 s). 400: invalid body or missing Idempotency-Key; 409: wallet not active, `insufficient_gas` (the wallet's native balance is below the limit × fee: `data.required`, `data.balance`), `gas_over_ceiling`, `approval_reverted` (mined and reverted: the key keeps this answer, so a retry never sends another), `approval_replaced` (another transaction of the wallet took its nonce: never mined, `data.replacedBy`); 502: the token or the node refused it before it was sent.",
        security: [{ bearer: [] }],
        body: permit2ApprovalBody,
        response: { 200: envelopeSchema(permit2ApprovalSchema), 202: envelopeSchema(permit2ApprovalSchema), ...errors(400, 401, 409, 502) },
      },
    },
    async (request, reply) => {
      requireIdempotencyKey(request, 'the approval is a transaction the wallet pays gas for');
      const principal = principalOf(request, 'wallet');
      return sendIdempotent(ctx.idempotency, request, reply, 'wallets.permit2-approval', async () => {
        const result = await approval.run(await wallets.payingWallet(principal.walletId), BigInt(request.body.amount));
        return { status: result.status, body: envelope(result.view) };
      });
    },
  );
}
