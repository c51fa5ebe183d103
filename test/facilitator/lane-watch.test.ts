// A relayer lane sees its transaction mined soon after the block, not a whole poll interval later: it looks as soon
// as its chain has shown it mines (half the time its last transaction took to be seen mined, from 5 ms), and
// less and less often while nothing mines, up to pollMs. Real anvil, automine off until the block is mined.
import { createPublicClient, custom, type Hash } from 'viem';
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

/** A funded lane whose reads are counted: the lane's looks are its eth_getTransactionCount pairs. */
async function countedLane(pollMs: number) {
  const account = privateKeyToAccount(generatePrivateKey());
  await app.ctx.chain.devchain!.fundGas(account.address);
  const reads = { counts: 0 };
  const client = createPublicClient({
    chain: app.ctx.chain.viemChain,
    transport: custom({
      request: ({ method, params }) => {
        if (method === 'eth_getTransactionCount') reads.counts += 1;
        return app.ctx.chain.publicClient.request({ method, params } as never);
      },
    }),
  });
  const lane = new RelayerSender(account, app.ctx.chain.publicClient, app.ctx.chain.chainId, { pollMs, reads: client });
  return { lane, reads, send: () => lane.send({ to: account.address, data: '0x', gas: 30_000n }) };
}

/** Sends with automine off and mines the block `mineAfterMs` later; resolves with the hash and when it was mined. */
async function minedLater(send: () => Promise<Hash>, mineAfterMs: number): Promise<{ hash: Hash; minedAt: number }> {
  const rpc = app.ctx.chain.rpcUrl;
  await rpcCall(rpc, 'evm_setAutomine', [false]);
  try {
    const hash = await send();
    await new Promise((resolve) => setTimeout(resolve, mineAfterMs));
    await rpcCall(rpc, 'evm_mine', []);
    return { hash, minedAt: Date.now() };
  } finally {
    await rpcCall(rpc, 'evm_setAutomine', [true]);
  }
}

it('a lane polling every 2 s that has seen its chain mine at once sees a block 50 ms after its send well before 2 s', async () => {
  const { lane, send } = await countedLane(2_000);
  await lane.waitMined(await send(), 10_000); // automine: seen mined at once
  const { hash, minedAt } = await minedLater(send, 50);
  await lane.whenMined(hash);
  expect(Date.now() - minedAt).toBeLessThan(1_000);
  expect(lane.unmined()).toEqual([]);
  expect((await app.ctx.chain.publicClient.getTransactionReceipt({ hash })).status).toBe('success');
});

it('a lane whose chain took a poll interval to mine looks no more than every half interval while nothing mines', async () => {
  const { lane, reads, send } = await countedLane(200);
  // Its first transaction is seen mined only after 400 ms: the chain is slow.
  const first = await minedLater(send, 400);
  await lane.whenMined(first.hash);
  reads.counts = 0;
  const second = await minedLater(send, 1_000);
  await lane.whenMined(second.hash);
  // 1 s with nothing mined and looks 100-200 ms apart: about 6 looks of two reads (from 5 ms, doubling: about 11).
  expect(reads.counts / 2).toBeLessThanOrEqual(8);
  expect(reads.counts).toBeGreaterThan(0);
});
