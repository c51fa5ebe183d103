import { eq } from 'drizzle-orm';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IndexedPayments } from '../../src/modules/txapi/payments.js';
import type { Clock } from '../../src/platform/clock.js';
import { FacilitatorSignerRegistry } from '../../src/x402/signers.js';
import { x402FacilitatorSigners } from '../../src/x402/tables.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';
import { catchUp, TestChain } from './chain-helpers.js';

const NETWORK = 'eip155:4663';
let chain: TestChain;
let testDb: TestDatabase;

beforeAll(async () => {
  chain = await TestChain.start();
}, 60_000);
afterAll(async () => {
  await testDb?.close();
  await chain?.stop();
});

async function freshDb() {
  await testDb?.close();
  testDb = await openTestDatabase();
  return testDb.database.db;
}

const at = (iso: string): Clock => ({ now: () => new Date(iso) }) as Clock;
const recipient = () => privateKeyToAccount(generatePrivateKey()).address;

async function newRelayer(): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey());
  await chain.devchain.fundGas(account.address);
  return account;
}

describe('facilitator signer registry', () => {
  it('keeps a rotated-out key, refreshes last_seen_at on a restart, and keeps the first source', async () => {
    const db = await freshDb();
    const [oldKey, newKey, external] = [recipient(), recipient(), recipient()];
    await new FacilitatorSignerRegistry(db, at('2026-01-01T00:00:00Z')).register(NETWORK, [oldKey.toLowerCase()], 'relayer');
    // The node restarts with a new key; an operator also lists an external facilitator (and, by mistake, the new key).
    const later = new FacilitatorSignerRegistry(db, at('2026-02-01T00:00:00Z'));
    await later.register(NETWORK, [newKey], 'relayer');
    await later.register(NETWORK, [external, newKey], 'config');
    await later.register('eip155:1', [external], 'config');

    expect(await later.list(NETWORK)).toEqual([oldKey, newKey, external].sort());
    expect(await later.list('eip155:1')).toEqual([external]);
    const rows = await db.select().from(x402FacilitatorSigners).where(eq(x402FacilitatorSigners.network, NETWORK));
    const byAddress = Object.fromEntries(rows.map((r) => [r.address, r]));
    expect(byAddress[oldKey]).toMatchObject({ source: 'relayer', lastSeenAt: new Date('2026-01-01T00:00:00Z') });
    expect(byAddress[newKey]).toMatchObject({ source: 'relayer', firstSeenAt: new Date('2026-02-01T00:00:00Z') });
    expect(byAddress[external]).toMatchObject({ source: 'config' });

    // A clock behind the stored time (another node's skew) never moves last_seen_at backwards.
    await new FacilitatorSignerRegistry(db, at('2025-12-01T00:00:00Z')).register(NETWORK, [oldKey], 'relayer');
    const [old] = await db.select().from(x402FacilitatorSigners).where(eq(x402FacilitatorSigners.address, oldKey));
    expect(old.lastSeenAt).toEqual(new Date('2026-01-01T00:00:00Z'));
  });
});

describe('indexing the registered signers', () => {
  it('re-reads the registry each tick: a signer registered later is followed from the checkpoint on, not back-filled', async () => {
    const db = await freshDb();
    const registry = new FacilitatorSignerRegistry(db, { now: () => new Date() } as Clock);
    const [a, b] = [await newRelayer(), await newRelayer()];
    await registry.register(NETWORK, [a.address], 'relayer');
    const indexer = chain.indexer(db, { signers: () => registry.list(NETWORK) });
    const payments = new IndexedPayments(db);
    const payer = await chain.payer();
    const to = recipient();

    const { receipt: byA } = await chain.pay(payer, to, '1', a);
    const { receipt: beforeB } = await chain.pay(payer, to, '1', b);
    const first = await catchUp(indexer);
    expect(first.checkpoint).toBeGreaterThanOrEqual(Number(beforeB.blockNumber));
    expect(await payments.findByTransaction(byA.transactionHash)).toHaveLength(1);
    expect(await payments.findByTransaction(beforeB.transactionHash)).toHaveLength(0);

    // b registers (as a facilitator does at start, before it sends) and settles: the same indexer
    // instance picks it up on its next tick.
    await registry.register(NETWORK, [b.address], 'relayer');
    const { receipt: afterB } = await chain.pay(payer, to, '1', b);
    await catchUp(indexer);
    const [found] = await payments.findByTransaction(afterB.transactionHash);
    expect(found?.facilitator).toBe(b.address);
    // Blocks the index had already passed are not re-read for a new signer (docs/txapi.md says why).
    expect(await payments.findByTransaction(beforeB.transactionHash)).toHaveLength(0);
  });

  it('misses nothing when a signer registers and settles while a tick is running (signers are read after the head)', async () => {
    const db = await freshDb();
    const registry = new FacilitatorSignerRegistry(db, { now: () => new Date() } as Clock);
    const [a, late] = [await newRelayer(), await newRelayer()];
    await registry.register(NETWORK, [a.address], 'relayer');
    const payer = await chain.payer();
    const to = recipient();
    let raced: `0x${string}` | null = null;
    const indexer = chain.indexer(db, {
      signers: async () => {
        const seen = await registry.list(NETWORK);
        if (!raced) {
          // Right after this tick read the registry: a new facilitator registers and its first settlement is mined.
          await registry.register(NETWORK, [late.address], 'relayer');
          raced = (await chain.pay(payer, to, '1', late)).receipt.transactionHash;
        }
        return seen;
      },
    });
    const first = await indexer.tick();
    const receipt = await chain.pub.getTransactionReceipt({ hash: raced! });
    // The tick covered only blocks up to the head it read before the registry, so the racing block is left for later...
    expect(first.checkpoint).toBeLessThan(Number(receipt.blockNumber));
    await catchUp(indexer);
    // ...where the next read of the registry includes the new signer.
    expect(await new IndexedPayments(db).findByTransaction(raced!)).toHaveLength(1);
  });
});
