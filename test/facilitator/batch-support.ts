// batch-settlement for the facilitator tests: the official @x402/express seller with the SDK's batch-settlement
// server scheme (its own receiverAuthorizer key, as this facilitator requires), the official client paying through
// @x402/fetch, and the chain's view of a channel.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { x402Client, x402HTTPClient } from '@x402/core/client';
import { HTTPFacilitatorClient, type FacilitatorClient } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { BatchSettlementEvmScheme, computeChannelId } from '@x402/evm/batch-settlement/client';
import { BatchSettlementEvmScheme as BatchSettlementServerScheme } from '@x402/evm/batch-settlement/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { wrapFetchWithPayment } from '@x402/fetch';
import express from 'express';
import { createPublicClient, createWalletClient, http, parseAbi, type Address, type Hex, type LocalAccount } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { rpcCall } from '../../src/chain/rpc.js';
import { BATCH_SETTLEMENT } from '../../src/chain/x402-contracts.js';
import { readChannel } from '../../src/x402/facilitator/batch/chain.js';
import type { TestApp } from '../helpers/test-app.js';
import { randomAddress } from '../x402/support.js';

export const NETWORK = 'eip155:4663';
export const WITHDRAW_DELAY = 900;

export interface BatchSeller {
  url: string;
  payTo: Address;
  authorizer: LocalAccount;
  scheme: BatchSettlementServerScheme;
  /** Our facilitator over HTTP, recording every settle the seller (its middleware, its channel manager) sends. */
  facilitator: FacilitatorClient;
  settles: Array<{ payload: PaymentPayload; requirements: PaymentRequirements }>;
  /** Requests the seller's handler ran. */
  served(): number;
  close(): Promise<void>;
}

/**
 * An official seller: @x402/express with the SDK's batch-settlement scheme, `price` atomic units per call; `minDeposit`
 * is the deposit it announces (the official client deposits it; the SDK's default is 10 calls' worth).
 */
export async function startBatchSeller(app: TestApp, price = '1000', minDeposit?: string): Promise<BatchSeller> {
  const payTo = randomAddress();
  const authorizer = privateKeyToAccount(generatePrivateKey());
  const client = new HTTPFacilitatorClient({ url: app.urls.facilitator });
  const settles: BatchSeller['settles'] = [];
  const facilitator: FacilitatorClient = {
    verify: (payload, requirements) => client.verify(payload, requirements),
    settle: (payload, requirements) => {
      settles.push({ payload, requirements });
      return client.settle(payload, requirements);
    },
    getSupported: () => client.getSupported(),
  };
  const scheme = new BatchSettlementServerScheme(payTo, { receiverAuthorizerSigner: authorizer as never, withdrawDelay: WITHDRAW_DELAY });
  const resourceServer = new x402ResourceServer(facilitator).register(NETWORK, scheme);
  const routes = {
    'GET /call': { accepts: { scheme: 'batch-settlement', network: NETWORK, payTo, price: { amount: price, asset: app.ctx.chain.asset.address, extra: { name: 'Global Dollar', version: '1', ...(minDeposit ? { minDeposit } : {}) } } }, description: 'one call' },
  };
  let served = 0;
  const server = express();
  server.use(paymentMiddleware(routes as never, resourceServer));
  server.get('/call', (_req, res) => {
    served += 1;
    res.json({ call: served });
  });
  const listener: Server = await new Promise((resolve) => {
    const s = server.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(listener.address() as AddressInfo).port}`,
    payTo,
    authorizer,
    scheme,
    facilitator,
    settles,
    served: () => served,
    close: () => new Promise((r) => listener.close(() => r())),
  };
}

/** A buyer paying through the official batch-settlement client; deposits are at most `maxPerPayment` × 5. */
export function batchBuyer(app: TestApp, payer: LocalAccount, maxPerPayment = '20000') {
  const publicClient = createPublicClient({ chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
  const signer = { address: payer.address, signTypedData: (m: never) => payer.signTypedData(m), readContract: publicClient.readContract.bind(publicClient) };
  const scheme = new BatchSettlementEvmScheme(signer as never);
  const client = x402Client.fromConfig({
    schemes: [{ network: NETWORK, client: scheme }],
    spendControls: { allowedAssets: [{ network: NETWORK, asset: app.ctx.chain.asset.address, maxAmountPerPayment: maxPerPayment }] },
  });
  const http402 = new x402HTTPClient(client);
  return { scheme, http: http402, pay: wrapFetchWithPayment(fetch, http402) };
}

/** The channel the official client opens for `payer` at `seller` (its default salt). */
export function channelOf(payer: Address, seller: BatchSeller, token: Address) {
  const config = {
    payer,
    payerAuthorizer: payer,
    receiver: seller.payTo,
    receiverAuthorizer: seller.authorizer.address,
    token,
    withdrawDelay: WITHDRAW_DELAY,
    salt: `0x${'00'.repeat(32)}` as Hex,
  };
  return { config, channelId: computeChannelId(config, NETWORK) as Hex };
}

export const channelState = (app: TestApp, channelId: Hex) => readChannel(app.ctx.chain.publicClient, channelId);

const withdrawAbi = parseAbi([
  'struct ChannelConfig { address payer; address payerAuthorizer; address receiver; address receiverAuthorizer; address token; uint40 withdrawDelay; bytes32 salt; }',
  'function initiateWithdraw(ChannelConfig config, uint128 amount)',
  'function finalizeWithdraw(ChannelConfig config)',
]);

/** The payer's escape hatch, from its own key: start a timed withdrawal, or finalize it once the delay has passed. */
export async function payerWithdraw(
  app: TestApp,
  payer: LocalAccount,
  config: ReturnType<typeof channelOf>['config'],
  step: 'initiate' | 'finalize',
  amount = 0n,
  fees: { maxPriorityFeePerGas?: bigint; maxFeePerGas?: bigint } = {},
): Promise<Hex> {
  const wallet = createWalletClient({ account: payer, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
  const hash =
    step === 'initiate'
      ? await wallet.writeContract({ address: BATCH_SETTLEMENT, abi: withdrawAbi, functionName: 'initiateWithdraw', args: [config, amount], ...fees })
      : await wallet.writeContract({ address: BATCH_SETTLEMENT, abi: withdrawAbi, functionName: 'finalizeWithdraw', args: [config], gas: 200_000n, ...fees });
  const receipt = await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success') throw new Error(`withdraw ${step} reverted`);
  return hash;
}

/** Moves the devchain's clock forward (the withdrawal delay) and mines a block there. */
export async function passTime(app: TestApp, seconds: number): Promise<void> {
  await rpcCall(app.ctx.chain.rpcUrl, 'evm_increaseTime', [seconds]);
  await rpcCall(app.ctx.chain.rpcUrl, 'evm_mine', []);
}
