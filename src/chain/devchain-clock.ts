// Keeping an idle devchain's clock current. anvil mines only when a transaction arrives, so its latest
// block's time falls behind the wall clock, while clients sign `validAfter = now - 600` and verdicts read
// the chain's time (block-clock.ts). devchain.ts calls it from Devchain.catchUp (shared by concurrent
// callers, and on a timer); this file holds only the decision and the one block it may mine.

/** What catching up needs of the devchain. */
export interface ChainClockPorts {
  /** The latest block's timestamp. */
  latest(): Promise<bigint>;
  rpc(method: string, params: unknown[]): Promise<unknown>;
  /** Runs `fn` in the queue of the minter's transactions. */
  serial<T>(fn: () => Promise<T>): Promise<T>;
}

/**
 * When the latest block is `minLagSeconds` or more behind the wall clock, mines one empty block stamped
 * with the wall clock (anvil then keeps its clock from there; it never moves backwards). Returns the latest
 * block's timestamp. With automine off nothing is mined (the block would include what is held in the pool).
 */
export async function catchUpChain(chain: ChainClockPorts, minLagSeconds: bigint): Promise<bigint> {
  const latest = await chain.latest();
  const now = BigInt(Math.floor(Date.now() / 1000));
  if (now - latest < minLagSeconds) return latest;
  // Automine off means someone holds transactions in the pool on purpose (a test of stuck or pending
  // settles): a block now would include them, so the chain's time waits for whoever mines next.
  if ((await chain.rpc('anvil_getAutomine', [])) === false) return latest;
  try {
    // Through the minter's queue: a mint waiting for its receipt is not raced by this block. The stamp is read
    // when the block is mined, not before the wait: anvil keeps its clock from the stamp, so a stamp that waited
    // seconds in the queue would leave every later block that far behind the wall clock.
    return await chain.serial(async () => {
      const stamp = BigInt(Math.floor(Date.now() / 1000));
      await chain.rpc('evm_mine', [{ timestamp: Number(stamp) }]);
      return stamp;
    });
  } catch {
    // A block mined meanwhile, a restart: the chain's word stands.
    return await chain.latest();
  }
}
