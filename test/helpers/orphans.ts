import path from 'node:path';
import { reapOrphan } from '../../src/chain/anvil.js';

// A test that SIGKILLs a service and then fails before restarting it on the same data dir leaves that service's
// devchain running (a restart would have reaped it). Test files stop it themselves, the way a restart does.

const quiet = { warn() {}, error() {} };

/** Stops the anvil whose pid file is in `dataDir`, if that pid still runs the anvil of that data dir's chain. */
export async function stopOrphanedDevchain(dataDir: string): Promise<void> {
  await reapOrphan(path.join(dataDir, 'chain', 'anvil.pid'), path.join(dataDir, 'chain', 'state.json'), quiet);
}
