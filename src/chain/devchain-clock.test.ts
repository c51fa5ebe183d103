// The catch-up block is stamped with the wall clock as it is mined: anvil keeps its clock from that stamp, so a
// stamp read before a wait in the minter's queue would leave every later block behind by the wait.
import { describe, expect, it } from 'vitest';
import { catchUpChain, type ChainClockPorts } from './devchain-clock.js';

const seconds = () => BigInt(Math.floor(Date.now() / 1000));

describe('catchUpChain', () => {
  it('stamps the block with the second it is mined in, after waiting its turn in the queue', async () => {
    const mined: Array<{ stamp: bigint; atMs: number }> = [];
    const chain: ChainClockPorts = {
      latest: async () => seconds() - 10n,
      rpc: async (method, params) => {
        if (method === 'anvil_getAutomine') return true;
        mined.push({ stamp: BigInt((params[0] as { timestamp: number }).timestamp), atMs: Date.now() });
        return null;
      },
      // A mint ahead in the queue holds it for 1.5 s.
      serial: async (fn) => {
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        return fn();
      },
    };
    const returned = await catchUpChain(chain, 2n);
    expect(mined).toHaveLength(1);
    // The second it was mined in (a stamp read before the 1.5 s wait would be 1.5 s or more behind).
    expect(mined[0]!.atMs - Number(mined[0]!.stamp) * 1000).toBeLessThan(1_100);
    expect(returned).toBe(mined[0]!.stamp);
  });

  it('mines nothing while the chain is current, or while automine is off', async () => {
    let mines = 0;
    const ports = (latestLag: bigint, automine: boolean): ChainClockPorts => ({
      latest: async () => seconds() - latestLag,
      rpc: async (method) => (method === 'anvil_getAutomine' ? automine : void (mines += 1)),
      serial: (fn) => fn(),
    });
    await catchUpChain(ports(0n, true), 2n);
    await catchUpChain(ports(10n, false), 2n);
    expect(mines).toBe(0);
  });
});
