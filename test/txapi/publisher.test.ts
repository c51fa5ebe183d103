import { and, asc, eq, isNotNull } from 'drizzle-orm';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ChainIndexer } from '../../src/chain/indexer/indexer.js';
import { systemClock } from '../../src/platform/clock.js';
import type { Db } from '../../src/platform/db.js';
import { AttestationSigner } from '../../src/modules/txapi/attestation.js';
import { Publisher } from '../../src/modules/txapi/publisher.js';
import { indexedPayments, indexerCheckpoints, recipientSequences } from '../../src/modules/txapi/tables.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';
import { CHAIN_ID, catchUp, TestChain } from '../indexer/chain-helpers.js';
import { randomAddress, seedPublished } from './seed.js';

let chain: TestChain;
let testDb: TestDatabase;
let db: Db;
let publisher: Publisher;
const signer = new AttestationSigner(generatePrivateKey());

beforeAll(async () => {
  chain = await TestChain.start();
}, 60_000);
beforeEach(async () => {
  await testDb?.close();
  testDb = await openTestDatabase();
  db = testDb.database.db;
  publisher = new Publisher(db, signer, systemClock);
});
afterAll(async () => {
  await testDb?.close();
  await chain?.stop();
});

/** What the worker loop does once: index, then publish everything final. */
async function step(indexer: ChainIndexer) {
  const tick = await catchUp(indexer);
  while ((await publisher.publish(CHAIN_ID, tick.finalizedThrough)) > 0);
  return tick;
}

const sequencesOf = async (recipient: string) =>
  (
    await db
      .select({ seq: indexedPayments.recipientSequence, tx: indexedPayments.transactionHash })
      .from(indexedPayments)
      .where(eq(indexedPayments.recipient, recipient))
      .orderBy(asc(indexedPayments.blockNumber))
  ).map((r) => [r.seq, r.tx] as const);

describe('publishing past the finality depth', () => {
  it('publishes a record only once its block has `confirmations` blocks on top', async () => {
    const indexer = chain.indexer(db, { confirmations: 2 });
    const payer = await chain.payer();
    const to = privateKeyToAccount(generatePrivateKey()).address;
    const { receipt } = await chain.pay(payer, to, '1');
    await step(indexer);
    expect(await sequencesOf(to)).toEqual([[null, receipt.transactionHash]]);
    await chain.mine(1);
    await step(indexer);
    expect(await sequencesOf(to)).toEqual([[null, receipt.transactionHash]]);
    await chain.mine(1);
    await step(indexer);
    expect(await sequencesOf(to)).toEqual([[1, receipt.transactionHash]]);
  });

  it('keeps sequence numbers across re-indexing and a reorg; an orphaned payment never gets one', async () => {
    const indexer = chain.indexer(db, { confirmations: 2 });
    const payer = await chain.payer();
    const to = privateKeyToAccount(generatePrivateKey()).address;
    const { receipt: first } = await chain.pay(payer, to, '1');
    const { receipt: second } = await chain.pay(payer, to, '1');
    await chain.mine(2);
    await step(indexer);
    expect(await sequencesOf(to)).toEqual([[1, first.transactionHash], [2, second.transactionHash]]);

    // Re-index everything from block 0: the rows exist, nothing is renumbered or re-counted.
    await db.update(indexerCheckpoints).set({ blockNumber: -1, blockHash: null }).where(eq(indexerCheckpoints.chainId, CHAIN_ID));
    await step(indexer);
    expect(await sequencesOf(to)).toEqual([[1, first.transactionHash], [2, second.transactionHash]]);

    // A payment that a reorg removes before finality is rolled back without taking a number.
    const snapshot = await chain.snapshot();
    const { receipt: orphan } = await chain.pay(payer, to, '7');
    await step(indexer);
    expect(await sequencesOf(to)).toEqual([[1, first.transactionHash], [2, second.transactionHash], [null, orphan.transactionHash]]);
    await chain.revert(snapshot);
    await chain.mine(2);
    const { receipt: third } = await chain.pay(payer, to, '1');
    await chain.mine(2);
    await step(indexer);
    expect(await sequencesOf(to)).toEqual([[1, first.transactionHash], [2, second.transactionHash], [3, third.transactionHash]]);
    const [counter] = await db.select().from(recipientSequences).where(eq(recipientSequences.recipient, to));
    expect(counter.lastSequence).toBe(3);
  });

  it('numbers contiguously from 1 per recipient under concurrent publishers', async () => {
    const a = randomAddress();
    const b = randomAddress();
    await seedPublished(
      db,
      Array.from({ length: 60 }, (_, i) => ({ recipient: i % 3 === 0 ? b : a, sequence: null, blockNumber: 100 + i })),
    );
    const publishers = [0, 1, 2].map(() => new Publisher(db, signer, systemClock, 7));
    await Promise.all(publishers.map(async (p) => {
      while ((await p.publish(CHAIN_ID, 1_000)) > 0);
    }));
    for (const [recipient, n] of [[a, 40], [b, 20]] as const) {
      const rows = await db
        .select({ seq: indexedPayments.recipientSequence, block: indexedPayments.blockNumber })
        .from(indexedPayments)
        .where(and(eq(indexedPayments.recipient, recipient), isNotNull(indexedPayments.recipientSequence)))
        .orderBy(asc(indexedPayments.recipientSequence));
      expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      // ... and in chain order.
      const blocks = rows.map((r) => r.block);
      expect(blocks).toEqual([...blocks].sort((x, y) => x - y));
    }
  });
});
