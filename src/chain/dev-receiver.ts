import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { privateKeyToAccount } from 'viem/accounts';
import { loadOrCreateDevSecret } from '../platform/data-dir.js';
import type { Db } from '../platform/db.js';
import type { KeySealer } from '../platform/sealing.js';
import { devReceivers } from '../platform/tables.js';

/**
 * A payee for the devchain when the operator named none: an address whose key is generated once into
 * the data dir (`name`), so payments to it survive restarts and can be spent in development.
 */
export function devReceiver(dataDir: string, name: string): string {
  return privateKeyToAccount(devReceiverKey(dataDir, name)).address;
}

const devReceiverKey = (dataDir: string, name: string) => loadOrCreateDevSecret(dataDir, name, () => `0x${randomBytes(32).toString('hex')}`) as `0x${string}`;

/** The associated data a shared receiver's key is sealed with. */
export const devReceiverBinding = (name: string) => `dev-receiver:${name}`;

/**
 * devReceiver, one for the whole deployment: the first node to ask records its key (the data dir's, so a single
 * node that had one keeps paying the same address) in the database, sealed under the master key; every node then
 * answers that one. So the nodes of a cluster all pay one address, whatever their data dirs.
 */
export async function sharedDevReceiver(deps: { db: Db; dataDir: string; sealer: KeySealer }, name: string): Promise<string> {
  const recorded = async () => (await deps.db.select({ address: devReceivers.address }).from(devReceivers).where(eq(devReceivers.name, name)))[0]?.address;
  const existing = await recorded();
  if (existing) return existing;
  const key = devReceiverKey(deps.dataDir, name);
  const address = privateKeyToAccount(key).address;
  await deps.db
    .insert(devReceivers)
    .values({ name, address, sealedKey: deps.sealer.seal(Buffer.from(key.slice(2), 'hex'), devReceiverBinding(name)) })
    .onConflictDoNothing();
  // Another node may have recorded its own first: the recorded one is the deployment's.
  return (await recorded()) ?? address;
}
