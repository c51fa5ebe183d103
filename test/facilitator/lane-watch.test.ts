// A relayer lane sees its transaction mined soon after the block, not a whole poll interval later: it looks 5 ms
// after a send and then less and less often, up to pollMs. Real anvil, automine off until the block is mined.
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rpcCall } from '../../src/chain/rpc.js';
import { RelayerSender } from '../../src/x402/facilitator/sender.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'] });
});
afterAll(async () => {
  if (app) await rpcCall(app.ctx.chain.rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
  await app?.close();
});

it('a lane polling every 2 s sees a transaction mined 50 ms after its send well before 2 s', async () => {
  const devchain = app.ctx.chain.devchain!;
  const account = privateKeyToAccount(generatePrivateKey());
  await devchain.fundGas(account.address);
  const lane = new RelayerSender(account, app.ctx.chain.publicClient, app.ctx.chain.chainId, { pollMs: 2_000 });
  await rpcCall(app.ctx.chain.rpcUrl, 'evm_setAutomine', [false]);
  let hash: `0x${string}`;
  try {
    hash = await lane.send({ to: account.address, data: '0x', gas: 30_000n });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await rpcCall(app.ctx.chain.rpcUrl, 'evm_mine', []);
  } finally {
    await rpcCall(app.ctx.chain.rpcUrl, 'evm_setAutomine', [true]);
  }
  const minedAt = Date.now();
  await lane.whenMined(hash);
  expect(Date.now() - minedAt).toBeLessThan(1_000);
  expect(lane.unmined()).toEqual([]);
  expect((await app.ctx.chain.publicClient.getTransactionReceipt({ hash })).status).toBe('success');
});
