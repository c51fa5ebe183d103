import { getAddress, isAddress, formatUnits } from 'viem';
import { z } from 'zod';
import { AdminCommandError } from '../../admin/errors.js';
import type { AppContext } from '../../context.js';
import { directErrorSchema } from '../../platform/http/schemas.js';
import type { Module } from '../module.js';

const assetSchema = z.object({ address: z.string(), symbol: z.string(), decimals: z.number().int(), name: z.string(), version: z.string() });

/** Dev helpers of the embedded mode: GET /dev/chain and `tollgate dev fund`. */
export function devModule(ctx: AppContext): Module {
  const { chain } = ctx;
  const devchain = chain.devchain;
  return {
    name: 'dev',
    adminCommands: {
      'dev.fund': async (args) => {
        if (!devchain) throw new AdminCommandError('dev fund needs the embedded devchain; CHAIN_RPC_URL is set');
        const address = typeof args.address === 'string' ? args.address : '';
        const amount = typeof args.amount === 'string' ? args.amount : String(args.amount ?? '');
        if (!isAddress(address)) throw new AdminCommandError(`not an EVM address: ${address}`);
        if (!/^\d+(\.\d{1,6})?$/.test(amount)) throw new AdminCommandError(`AMOUNT must be a decimal USDG amount with at most 6 decimals: ${amount}`);
        const to = getAddress(address);
        const txHash = await devchain.fund(to, amount);
        const balance = await devchain.balanceOf(to);
        return { address: to, amount, asset: chain.asset.address, txHash, balance: formatUnits(balance, chain.asset.decimals) };
      },
    },
    routes: devchain
      ? {
          api: (app) => {
            app.get(
              '/dev/chain',
              {
                schema: {
                  tags: ['dev'],
                  summary: 'Devchain connection facts (embedded mode only)',
                  response: {
                    200: z.object({ rpcUrl: z.string(), chainId: z.number().int(), network: z.string(), asset: assetSchema, facilitatorUrl: z.string() }),
                    500: directErrorSchema,
                  },
                },
              },
              async () => ({
                rpcUrl: chain.rpcUrl,
                chainId: chain.chainId,
                network: chain.network,
                asset: {
                  address: chain.asset.address,
                  symbol: chain.asset.symbol,
                  decimals: chain.asset.decimals,
                  name: chain.asset.eip712.name,
                  version: chain.asset.eip712.version,
                },
                facilitatorUrl: ctx.config.facilitatorUrl ?? ctx.urls.facilitator,
              }),
            );
          },
        }
      : undefined,
  };
}
