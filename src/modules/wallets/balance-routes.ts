import { z } from 'zod';
import type { preHandlerAsyncHookHandler } from 'fastify';
import { principalOf } from '../../platform/auth/authenticator.js';
import { conflict } from '../../platform/http/errors.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../platform/http/schemas.js';
import type { ZodApp } from '../module.js';
import { walletIdParams } from './schemas.js';
import type { WalletsService } from './service.js';

export const walletBalanceSchema = z.object({
  network: z.string().describe('CAIP-2, e.g. eip155:4663'),
  asset: z.string().describe("the token's contract address"),
  symbol: z.string(),
  decimals: z.number().int(),
  amount: z.string().describe('atomic units (`decimals` places), as the chain reads it now'),
});

/**
 * A wallet's USDG balance for its management credential (extension; docs/wallets.md). Read from the chain
 * at each call, never cached: the dashboard shows it beside each wallet.
 */
export function balanceRoutes(app: ZodApp, deps: { mgmt: preHandlerAsyncHookHandler; wallets: WalletsService }) {
  const { mgmt, wallets } = deps;
  app.get(
    '/v1/wallets/:walletId/balance',
    {
      onRequest: mgmt,
      schema: {
        tags: ['wallets'],
        summary: "A wallet's balance of the chain's asset (USDG), read from the chain now (extension)",
        description: '409 `wallet_not_active` while the wallet has no address yet (provisioning, or failed).',
        security: [{ bearer: [] }],
        params: walletIdParams,
        response: { 200: envelopeSchema(walletBalanceSchema), ...errors(401, 404, 409) },
      },
    },
    async (request) => {
      // Ownership first: another credential's wallet is "not found", whatever its state.
      const wallet = await wallets.get(principalOf(request, 'mgmt').credentialId, request.params.walletId);
      const balance = await wallets.balance(wallet.id);
      if (!balance) throw conflict(`The wallet is ${wallet.status} and has no address yet`, 'wallet_not_active', { status: wallet.status });
      return envelope(balance);
    },
  );
}
