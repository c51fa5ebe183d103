import { count, eq, sql } from 'drizzle-orm';
import { getAddress, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USDG_ADDRESS } from '../../src/chain/devchain.js';
import { usdgAbi } from '../../src/chain/usdg-artifact.js';
import { paymentIdOf } from '../../src/chain/indexer/payment-id.js';
import { IndexedPayments } from '../../src/modules/txapi/payments.js';
import { indexedPayments, indexerCheckpoints } from '../../src/modules/txapi/tables.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';
import { CHAIN_ID, catchUp, TestChain } from './chain-helpers.js';

let chain: TestChain;
let testDb: TestDatabase;
let payments: IndexedPayments;
const recipient = () => privateKeyToAccount(generatePrivateKey()).address;

beforeAll(async () => {
  chain = await TestChain.start();
}, 60_000);
afterAll(async () => {
  await chain?.stop();
});

async function freshDb() {
  await testDb?.close();
  testDb = await openTestDatabase();
  payments = new IndexedPayments(testDb.database.db);
  return testDb.database.db;
}
afterAll(async () => {
  await testDb?.close();
});

/** Rows paid to one recipient: the chain is shared by the tests, and a fresh index starts at block 0. */
const rowCount = async (to: Address) =>
  (await testDb.database.db.select({ n: count() }).from(indexedPayments).where(eq(indexedPayments.recipient, getAddress(to))))[0].n;

describe('chain indexer', () => {
  it('indexes a payment our relayer settled, with every field', async () => {
    const db = await freshDb();
    const payer = await chain.payer();
    const to = recipient();
    const { auth, receipt } = await chain.pay(payer, to, '1.25');
    const tick = await catchUp(chain.indexer(db));
    expect(tick.checkpoint).toBe(await chain.head());

    const found = await payments.findByAuthorization(CHAIN_ID, USDG_ADDRESS, payer.address, auth.nonce);
    const block = await chain.pub.getBlock({ blockNumber: receipt.blockNumber });
    const transferLog = receipt.logs.find((l) => l.topics[0] === '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef')!;
    expect(found).toMatchObject({
      paymentId: paymentIdOf(CHAIN_ID, USDG_ADDRESS, payer.address, auth.nonce),
      chainId: CHAIN_ID,
      token: USDG_ADDRESS,
      payer: payer.address,
      recipient: getAddress(to),
      value: 1_250_000n,
      authorizationNonce: auth.nonce.toLowerCase(),
      transactionHash: receipt.transactionHash,
      logIndex: transferLog.logIndex,
      blockNumber: Number(receipt.blockNumber),
      blockTimestamp: Number(block.timestamp),
      facilitator: chain.relayer.address,
    });
    expect(await payments.findByTransaction(receipt.transactionHash)).toHaveLength(1);
    expect((await payments.findByPaymentId(found!.paymentId))?.transactionHash).toBe(receipt.transactionHash);
  });

  it('skips a reused nonce (AuthorizationAlreadyUsed moves nothing), plain transfers, and transactions other relayers sent', async () => {
    const db = await freshDb();
    const indexer = chain.indexer(db);
    const payer = await chain.payer();
    const to = recipient();
    const { auth, receipt: first } = await chain.pay(payer, to, '2');
    // Same signed authorization relayed again: USDG does not revert, it emits AuthorizationAlreadyUsed.
    const replay = await chain.relay(auth);
    expect(replay.logs).toHaveLength(1);
    // A valid payment relayed by someone who is not our facilitator.
    const stranger = privateKeyToAccount(generatePrivateKey());
    await chain.devchain.fundGas(stranger.address);
    const { receipt: foreign } = await chain.pay(payer, to, '3', stranger);
    expect(foreign.logs).toHaveLength(2);
    // Our relayer moving its own USDG: a Transfer with no authorization is not a payment.
    await chain.devchain.fund(chain.relayer.address, '1');
    const plainHash = await chain.wallet.writeContract({
      address: USDG_ADDRESS, abi: usdgAbi, functionName: 'transfer', args: [to, 1n], account: chain.relayer, chain: null,
    });
    const plain = await chain.pub.waitForTransactionReceipt({ hash: plainHash });
    expect(plain.logs).toHaveLength(1);

    await catchUp(indexer);
    expect(await payments.findByTransaction(first.transactionHash)).toHaveLength(1);
    expect(await payments.findByTransaction(replay.transactionHash)).toHaveLength(0);
    expect(await payments.findByTransaction(foreign.transactionHash)).toHaveLength(0);
    expect(await payments.findByTransaction(plain.transactionHash)).toHaveLength(0);
    expect(await rowCount(to)).toBe(1);
  });

  it('resumes from its checkpoint after a restart, and re-indexing adds no duplicates', async () => {
    const db = await freshDb();
    const payer = await chain.payer();
    const to = recipient();
    await chain.pay(payer, to, '1');
    await chain.pay(payer, to, '1');
    const first = await catchUp(chain.indexer(db));
    expect(await rowCount(to)).toBe(2);

    // A new instance (a restarted worker) starts where the checkpoint says, not at the start block.
    await chain.pay(payer, to, '1');
    const restarted = chain.indexer(db, { startBlock: 0 });
    const tick = await restarted.tick();
    expect(tick.checkpoint).toBe(await chain.head());
    expect(tick.checkpoint).toBe(first.checkpoint + 1);
    expect(await rowCount(to)).toBe(3);

    // Crash between commit and anything else: rewinding the checkpoint re-reads known blocks harmlessly.
    await db.update(indexerCheckpoints).set({ blockNumber: -1, blockHash: null }).where(eq(indexerCheckpoints.chainId, CHAIN_ID));
    await catchUp(chain.indexer(db));
    expect(await rowCount(to)).toBe(3);
  });

  it('indexes from the range scan (below the reorg window) the same as block by block', async () => {
    const db = await freshDb();
    const payer = await chain.payer();
    const { receipt } = await chain.pay(payer, recipient(), '4');
    await chain.mine(5);
    // reorgWindow 1 and small batches: old blocks come from eth_getLogs ranges.
    const tick = await catchUp(chain.indexer(db, { reorgWindow: 1, maxBlocksPerTick: 7 }));
    expect(tick.checkpoint).toBe(await chain.head());
    expect(await payments.findByTransaction(receipt.transactionHash)).toHaveLength(1);
  });

  it("starts at the head with startBlock 'latest' (no backfill) and follows from there", async () => {
    const db = await freshDb();
    const payer = await chain.payer();
    const to = recipient();
    const { receipt: before } = await chain.pay(payer, to, '1');
    await chain.mine(1); // 'latest' includes the head block itself
    const indexer = chain.indexer(db, { startBlock: 'latest' });
    await catchUp(indexer);
    const { receipt: after } = await chain.pay(payer, to, '1');
    await catchUp(indexer);
    expect(await payments.findByTransaction(before.transactionHash)).toHaveLength(0);
    expect(await payments.findByTransaction(after.transactionHash)).toHaveLength(1);
  });

  it('rolls back unfinalized rows on a reorg and re-indexes the new branch', async () => {
    const db = await freshDb();
    const indexer = chain.indexer(db, { confirmations: 3 });
    const payer = await chain.payer();
    const to = recipient();
    const { receipt: kept } = await chain.pay(payer, to, '1');
    await chain.mine(3);
    await catchUp(indexer);

    const snapshot = await chain.snapshot();
    const { auth, receipt: orphan } = await chain.pay(payer, to, '5');
    const { receipt: orphan2 } = await chain.pay(payer, to, '6');
    const before = await catchUp(indexer);
    expect(before.finalizedThrough).toBeLessThan(Number(orphan.blockNumber));
    expect(await payments.findByTransaction(orphan.transactionHash)).toHaveLength(1);

    // The branch with both payments disappears; the new branch is longer and re-includes only the first.
    await chain.revert(snapshot);
    await chain.mine(1);
    const reincluded = await chain.relay(auth);
    await chain.mine(2);
    const after = await catchUp(indexer);
    expect(after.checkpoint).toBe(await chain.head());

    expect(await payments.findByTransaction(orphan2.transactionHash)).toHaveLength(0);
    expect(await payments.findByTransaction(kept.transactionHash)).toHaveLength(1);
    const moved = await payments.findByAuthorization(CHAIN_ID, USDG_ADDRESS, payer.address, auth.nonce);
    expect(moved?.transactionHash).toBe(reincluded.transactionHash);
    expect(moved?.blockNumber).toBe(Number(reincluded.blockNumber));
    const stale = await testDb.database.db
      .select({ n: count() })
      .from(indexedPayments)
      .where(sql`${indexedPayments.blockHash} <> all(${sql.raw(`array[${await hashesOnChain(db)}]::text[]`)})`);
    expect(stale[0].n).toBe(0);
  });

  it('notices a reorg to a shorter chain', async () => {
    const db = await freshDb();
    const indexer = chain.indexer(db, { confirmations: 2 });
    const payer = await chain.payer();
    const snapshot = await chain.snapshot();
    const { receipt } = await chain.pay(payer, recipient(), '1');
    await chain.mine(2);
    await catchUp(indexer);
    expect(await payments.findByTransaction(receipt.transactionHash)).toHaveLength(1);
    await chain.revert(snapshot);
    const tick = await indexer.tick();
    expect(tick.rolledBack).toBe(true);
    await catchUp(indexer);
    expect(await payments.findByTransaction(receipt.transactionHash)).toHaveLength(0);
  });
});

/** The block hashes of every indexed row's block number on the current chain, as an SQL list. */
async function hashesOnChain(db: Parameters<TestChain['indexer']>[0]): Promise<string> {
  const rows = await db.selectDistinct({ n: indexedPayments.blockNumber }).from(indexedPayments);
  const hashes = await Promise.all(rows.map(async (r) => (await chain.pub.getBlock({ blockNumber: BigInt(r.n) })).hash));
  return hashes.map((h) => `'${h}'`).join(',') || "''";
}
