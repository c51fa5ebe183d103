import { asc, eq, sql } from 'drizzle-orm';
import { getAddress, type Address } from 'viem';
import type { Clock } from '../platform/clock.js';
import type { Db } from '../platform/db.js';
import { x402FacilitatorSigners as signers } from './tables.js';

export type SignerSource = 'relayer' | 'config';

/**
 * The deployment's facilitator signers (x402_facilitator_signers). Registering is an upsert that only
 * ever adds rows or refreshes last_seen_at, so nodes starting together, or one restarting with a
 * rotated key, need no coordination and lose nothing.
 */
export class FacilitatorSignerRegistry {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  async register(network: string, addresses: readonly string[], source: SignerSource): Promise<void> {
    const unique = [...new Set(addresses.map((a) => getAddress(a)))];
    if (unique.length === 0) return;
    const at = this.clock.now();
    await this.db
      .insert(signers)
      .values(unique.map((address) => ({ network, address, source, firstSeenAt: at, lastSeenAt: at })))
      .onConflictDoUpdate({
        target: [signers.network, signers.address],
        // The first source and first_seen_at stay: they say how the address came to be trusted.
        set: { lastSeenAt: sql`greatest(${signers.lastSeenAt}, excluded.last_seen_at)` },
      });
  }

  /** Every signer ever registered on the network (a primary-key range read: cheap enough to run per tick). */
  async list(network: string): Promise<Address[]> {
    const rows = await this.db.select({ address: signers.address }).from(signers).where(eq(signers.network, network)).orderBy(asc(signers.address));
    return rows.map((r) => r.address as Address);
  }
}

/**
 * Registers this node's signers at context start: the relayer pool's addresses when this node has a
 * relayer, and FACILITATOR_SIGNERS. It must finish before the facilitator can broadcast (see
 * ChainIndexer.tick for why that makes a late registration safe), so a failure fails the start.
 */
export async function registerFacilitatorSigners(
  registry: FacilitatorSignerRegistry,
  input: { network: string; relayerSigners: readonly string[]; configured: readonly string[] },
): Promise<void> {
  await registry.register(input.network, input.relayerSigners, 'relayer');
  await registry.register(input.network, input.configured, 'config');
}
