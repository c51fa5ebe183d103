// Scale-out indexing: several nodes on one database and one chain. Facilitator instances with their
// own relayer keys register them at start; a worker with no key indexes every registered signer, and
// payment intents paid through either instance settle from that index on any node.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PaymentRequirements, SettleResponse } from '@x402/core/types';
import { eq } from 'drizzle-orm';
import pino from 'pino';
import { getAddress, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureMulticall3 } from '../../src/chain/multicall3.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { Role } from '../../src/platform/server-settings.js';
import type { ModuleFactory } from '../../src/modules/module.js';
import { indexerCheckpoints } from '../../src/modules/txapi/tables.js';
import { openDatabase, type Database } from '../../src/platform/db.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { FacilitatorSignerRegistry } from '../../src/x402/signers.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';
import type { TestApp } from '../helpers/test-app.js';
import { Faults } from '../intents/faults.js';
import { createIntent, createShop } from '../intents/fixtures.js';
import { getIntent, pay, payFactories, reconcile, signedHeader, transfersTo } from '../intents/harness.js';
import { signAuthorization } from '../x402/support.js';
import { CHAIN_ID, TestChain } from './chain-helpers.js';

const NETWORK = `eip155:${CHAIN_ID}`;
// One pepper for the deployment, as every real scale-out needs (README): a project key made on one node works on all.
const SECRET_PEPPER = randomBytes(32).toString('hex');
let chain: TestChain;
let testDb: TestDatabase;
const running: Array<{ server: RunningServer; close(): Promise<void> }> = [];

beforeAll(async () => {
  chain = await TestChain.start();
  // What the embedded chain service does for itself; against CHAIN_RPC_URL the chain must have it.
  await ensureMulticall3(chain.pub, chain.devchain.rpcUrl);
  testDb = await openTestDatabase();
}, 60_000);
afterAll(async () => {
  for (const node of running.reverse()) await node.close();
  await testDb?.close();
  await chain?.stop();
});

/**
 * One node of the deployment: its own data dir, roles and environment, the shared chain (CHAIN_RPC_URL)
 * and the shared database (on PostgreSQL its own connection pool, as a separate machine would have).
 */
async function startNode(
  roles: Role[],
  env: Record<string, string> = {},
  factories?: ModuleFactory[],
): Promise<RunningServer & { config: Config; stopNode(): Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-node-'));
  const config = loadConfig({
    TOLLGATE_DATA_DIR: dataDir,
    API_PORT: '0',
    FACILITATOR_PORT: '0',
    RELAY_PORT: '0',
    ASSETS_PORT: '0',
    LOG_LEVEL: 'silent',
    CHAIN_RPC_URL: chain.devchain.rpcUrl,
    INDEXER_CONFIRMATIONS: '0',
    INDEXER_START_BLOCK: '0',
    INDEXER_POLL_MS: '50',
    FACILITATOR_PAY_TO_POLICY: 'any',
    SECRET_PEPPER,
    ...(testDb.url ? { DATABASE_URL: testDb.url } : {}),
    ...env,
  });
  let own: Database | null = null;
  if (testDb.url) own = await openDatabase({ url: testDb.url, pgliteDir: null, poolSize: 4 });
  const server = await startServer({
    config,
    roles,
    factories,
    database: own ?? testDb.database,
    ephemeralSecrets: true,
    adminSocket: false,
    log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await server.stop();
    await own?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  running.push({ server, close });
  return { ...server, config, stopNode: close };
}

async function facilitatorNode(roles: Role[] = ['facilitator'], factories?: ModuleFactory[]) {
  const key = generatePrivateKey();
  const account = privateKeyToAccount(key);
  await chain.devchain.fundGas(account.address);
  return { node: await startNode(roles, { FACILITATOR_PRIVATE_KEY: key }, factories), address: account.address, account };
}

/** A node as the intents tests' TestApp, so their fixtures and harness drive it. */
function asApp(node: Awaited<ReturnType<typeof startNode>>): TestApp {
  return {
    ...node,
    testDatabase: testDb,
    identityToken: (sub, ttl) => node.ctx.devIdentity!.sign(sub, ttl),
    mgmtSecret: async (name = 'test') => (await node.ctx.mgmtCredentials.create(name)).secret,
    close: node.stopNode,
  };
}

/** A payment to `payTo` settled through one facilitator node's public /settle. */
async function settleThrough(node: RunningServer, payTo: Address, amount = '1000'): Promise<Hex> {
  const payer = await chain.payer('1');
  const requirements: PaymentRequirements = node.ctx.x402.requirements({ url: 'http://test/resource', description: 'test', mimeType: 'application/json', amount, payTo });
  const paymentPayload = await signAuthorization(payer, requirements);
  const res = await fetch(`${node.urls.facilitator}/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ x402Version: 2, paymentPayload, paymentRequirements: requirements }),
  });
  const body = (await res.json()) as SettleResponse;
  expect(body).toMatchObject({ success: true });
  return body.transaction as Hex;
}

interface TxRecord {
  transactionHash: Hex;
  facilitator: Address;
  attestation: { recipientSequence: string };
}

/** The worker's public transaction API: published records for a recipient, waiting up to ~10 s for `count`. */
async function publishedFor(worker: RunningServer, recipient: Address, count: number): Promise<TxRecord[]> {
  let records: TxRecord[] = [];
  for (let i = 0; i < 200; i++) {
    const res = await fetch(`${worker.urls.api}/x402scan/transactions?recipient=${recipient}`);
    records = (await res.json()) as TxRecord[];
    if (records.length >= count) return records;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return records;
}

const recipient = () => privateKeyToAccount(generatePrivateKey()).address;

describe('indexing across nodes (one database, one chain)', () => {
  let a: Awaited<ReturnType<typeof facilitatorNode>>;
  let b: Awaited<ReturnType<typeof facilitatorNode>>;
  let worker: Awaited<ReturnType<typeof startNode>>;

  beforeAll(async () => {
    a = await facilitatorNode();
    b = await facilitatorNode();
    worker = await startNode(['api', 'worker']);
  }, 120_000);

  it('a worker with no relayer key indexes and publishes the payments of two facilitator instances with different keys', async () => {
    expect(worker.ctx.chain.facilitatorSigners()).toEqual([]);
    expect(worker.ctx.facilitator).toBeNull();
    const to = recipient();
    const viaA = await settleThrough(a.node, to);
    const viaB = await settleThrough(b.node, to);

    const records = await publishedFor(worker, to, 2);
    expect(records.map((r) => [r.transactionHash, r.facilitator])).toEqual([
      [viaB, b.address],
      [viaA, a.address],
    ]);
    expect(records.map((r) => r.attestation.recipientSequence)).toEqual(['2', '1']);
  });

  it('settles a payment intent paid through each facilitator instance from the worker\'s index, after the pay answer was lost', { timeout: 30_000 }, async () => {
    // Two API nodes, each settling through its own in-process facilitator (relayer key A, key B) over
    // wrapped payment ports: each loses the answer of its next settle after the transfer was mined.
    const faultsA = new Faults();
    const faultsB = new Faults();
    const nodeA = await facilitatorNode(['api', 'facilitator'], payFactories(faultsA.options()));
    const nodeB = await facilitatorNode(['api', 'facilitator'], payFactories(faultsB.options()));
    const [appA, appB, workerApp] = [asApp(nodeA.node), asApp(nodeB.node), asApp(worker)];
    const shop = await createShop(appA);
    const intentA = (await createIntent(appA, shop, { amountUsdCents: 150 })).json();
    const intentB = (await createIntent(appB, shop, { amountUsdCents: 275 })).json();
    const payerA = await chain.payer('10');
    const payerB = await chain.payer('10');

    for (const [app, faults, intent, payer] of [
      [appA, faultsA, intentA, payerA],
      [appB, faultsB, intentB, payerB],
    ] as const) {
      const header = await signedHeader(app, intent.id, payer);
      faults.crashAfterBroadcast();
      const lost = await pay(app, intent.id, { 'payment-signature': header });
      expect(lost.statusCode).toBe(503);
      expect(lost.json()).toMatchObject({ code: 'settlement_result_unknown' });
      expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'settling', transactionHash: null, failureCode: 'settlement_result_unknown' });
    }

    // On chain: one transfer per intent, each sent by its node's own relayer key.
    const transfers = await transfersTo(appA, shop.payTo);
    expect(transfers.map((t) => t.args.value)).toEqual([1_500_000n, 2_750_000n]);
    const [viaA, viaB] = transfers.map((t) => t.transactionHash);
    expect((await chain.pub.getTransaction({ hash: viaA })).from).toBe(nodeA.address.toLowerCase());
    expect((await chain.pub.getTransaction({ hash: viaB })).from).toBe(nodeB.address.toLowerCase());

    // The keyless worker indexes both, each attributed to the facilitator that sent it.
    const records = await publishedFor(worker, shop.payTo, 2);
    expect(records.map((r) => [r.transactionHash, r.facilitator])).toEqual([
      [viaB, nodeB.address],
      [viaA, nodeA.address],
    ]);

    // Reconcile on nodes other than the one that took the payment (one on the keyless worker): the index
    // in the shared database settles each intent with its own transaction. The worker's own reconciliation
    // loop leaves them alone (settling for less than INTENT_RECONCILE_GRACE_SECONDS, 60 s by default).
    const settledA = await reconcile(appB, shop.apiKey, intentA.id);
    const settledB = await reconcile(workerApp, shop.apiKey, intentB.id);
    expect(settledA.json()).toMatchObject({ status: 'settled', transactionHash: viaA, failureCode: null });
    expect(settledB.json()).toMatchObject({ status: 'settled', transactionHash: viaB, failureCode: null });
    // Every node reads the same intent (paymentUrl names each node's own API origin: no PUBLIC_API_URL here).
    expect(await getIntent(appA, shop.apiKey, intentB.id)).toEqual({ ...settledB.json(), paymentUrl: expect.any(String) });

    // Money moved once per intent: no second transfer, each payer charged exactly its intent.
    expect((await transfersTo(appA, shop.payTo)).map((t) => t.transactionHash)).toEqual([viaA, viaB]);
    expect(await chain.devchain.balanceOf(payerA.address)).toBe(10_000_000n - 1_500_000n);
    expect(await chain.devchain.balanceOf(payerB.address)).toBe(10_000_000n - 2_750_000n);
  });

  it('follows a facilitator started later with a rotated key, and keeps the old key indexed', { timeout: 60_000 }, async () => {
    const to = recipient();
    const beforeRotation = await settleThrough(a.node, to);
    await a.node.stopNode();
    // The same instance comes back with a new key: it registers the new one, the old row stays.
    const rotated = await facilitatorNode();
    const afterRotation = await settleThrough(rotated.node, to);
    // A transaction the old key sent before the rotation but that is mined only now (stuck, then included).
    const { receipt: lateOldKey } = await chain.pay(await chain.payer(), to, '1', a.account);

    const records = await publishedFor(worker, to, 3);
    expect(records.map((r) => [r.transactionHash, r.facilitator])).toEqual([
      [lateOldKey.transactionHash, a.address],
      [afterRotation, rotated.address],
      [beforeRotation, a.address],
    ]);
    const registered = await new FacilitatorSignerRegistry(testDb.database.db, worker.ctx.clock).list(NETWORK);
    expect(registered).toEqual(expect.arrayContaining([a.address, b.address, rotated.address]));
  });

  it('indexes an external facilitator named in FACILITATOR_SIGNERS from the moment a node registers it, not before', { timeout: 60_000 }, async () => {
    const external = privateKeyToAccount(generatePrivateKey());
    await chain.devchain.fundGas(external.address);
    const payer = await chain.payer();
    const to = recipient();
    const { receipt: early } = await chain.pay(payer, to, '1', external);
    await waitForCheckpoint(Number(early.blockNumber));

    // Any node with the variable registers it (here an API-only node); the worker needs no restart.
    await startNode(['api'], { FACILITATOR_SIGNERS: external.address.toLowerCase() });
    const { receipt: late } = await chain.pay(payer, to, '2', external);
    const records = await publishedFor(worker, to, 1);
    expect(records.map((r) => [r.transactionHash, r.facilitator])).toEqual([[late.transactionHash, getAddress(external.address)]]);
    // The early payment was in blocks the index had passed before the signer was known: not back-filled (docs/txapi.md).
    await waitForCheckpoint(Number(late.blockNumber));
    expect((await publishedFor(worker, to, 1)).map((r) => r.transactionHash)).toEqual([late.transactionHash]);
  });
});

async function waitForCheckpoint(block: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const [row] = await testDb.database.db.select().from(indexerCheckpoints).where(eq(indexerCheckpoints.chainId, CHAIN_ID));
    if (row && row.blockNumber >= block) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`indexer checkpoint did not reach block ${block}`);
}
