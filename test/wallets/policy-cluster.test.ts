// Spend policies across a cluster (issue 28, first "Must show"): four `tollgate serve` processes on one
// PostgreSQL database and one chain, as one service (same pepper, same wallet master key, one relayer key
// each), and one wallet whose policy allows 10 payments' worth per 24 h. Fifty concurrent pay-and-calls,
// spread round-robin over the four nodes, each paying node 1's /x402-test/ping:
// - exactly 10 settle, 40 are refused with policy_limit_exceeded, spent = limit, and the chain agrees
//   (the wallet's balance and its Transfer logs, not the service's word);
// - again on a fresh wallet, with one node SIGKILLed in the middle of the burst and restarted on the same
//   configuration: once the reconciler has ended every open payment (the chain's time moved past every
//   authorization the dead node could have signed), nothing is over the limit on chain or in the ledger,
//   every 200 answer's payment is settled, and the budget the crash held is free again (a second burst
//   spends it exactly to the limit).
// PostgreSQL only: PGlite is one process per data dir, so there is no cluster to run.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { count, eq } from 'drizzle-orm';
import { createPublicClient, http, parseAbiItem, type Address, type Hex, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callAdminSocket } from '../../src/admin/socket.js';
import { Devchain, devchainChain, USDG_ADDRESS } from '../../src/chain/devchain.js';
import { ensureMulticall3 } from '../../src/chain/multicall3.js';
import { walletPayments } from '../../src/modules/wallets/tables.js';
import { reportCounts } from '../fuzz/tenants.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';
import { freePort, kill9, NodeProcesses } from '../helpers/cluster-nodes.js';

const NETWORK = 'eip155:4663';
const PRICE = 100n; // the ping's price, atomic USDG
const LIMIT = 10n * PRICE;
const NODES = 4;
const CALLS = 50;
/** Which node dies in the second scenario: not node 1, the seller every node pays. */
const VICTIM = 2;
const transferEvent = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
const usedEvent = parseAbiItem('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// The deployment's shared secrets, as every node of a real scale-out has them. The identity issuer stays the
// dev one (ALLOW_DEV_KEYS=1): nothing here signs in, and a JWKS stand-in would add nothing.
const shared = {
  SECRET_PEPPER: randomBytes(32).toString('hex'),
  WALLET_MASTER_KEY: randomBytes(32).toString('hex'),
  ATTESTATION_PRIVATE_KEY: generatePrivateKey(),
  X402_TEST_PAY_TO: privateKeyToAccount(generatePrivateKey()).address,
  ALLOW_DEV_KEYS: '1',
};
const payTo = shared.X402_TEST_PAY_TO;

interface Node {
  index: number;
  dataDir: string;
  apiPort: number;
  api: string;
  env: Record<string, string>;
  child: ChildProcess;
  /** 'SIGKILL' or the exit code. */
  exited: Promise<string | number | null>;
  output: () => string;
}

let chain: Devchain;
let pub: PublicClient;
let testDb: TestDatabase;
const nodes: Node[] = [];
/** Every serve process this file started, by pid: each is stopped in afterAll. */
const processes = new NodeProcesses();
const dirs: string[] = [];
const counts = {
  ops: 0,
  kills: 0,
  /** A ledger or chain found over the limit (counted before the assertion fails). */
  violations: 0,
  /** Calls whose node died under them. */
  lostAnswers: 0,
  /** Payments the killed node had reserved (rows no answer named): settled if it sent them, else failed once expired. */
  killedInFlight: 0,
  /** Of those, the ones it never sent: released by the reconciler once the chain's time passed validBefore. */
  releasedReservations: 0,
};

/** `tollgate serve` (every role) on the node's data dir, ports and environment; resolves once it printed its origins. */
async function serve(node: Omit<Node, 'child' | 'exited' | 'output' | 'api'>): Promise<Node> {
  const served = await processes.serve({ label: `node ${node.index + 1}`, env: node.env });
  return { ...node, api: `http://127.0.0.1:${node.apiPort}`, child: served.child, exited: served.exited, output: served.output };
}

// A timeline on stdout, which vitest shows only when a test fails (silent: 'passed-only').
const T0 = Date.now();
const mark = (what: string) => console.log(`[policy-cluster t+${((Date.now() - T0) / 1000).toFixed(1)}s] ${what}`);

// ---------------------------------------------------------------------------------------------------------
// The API, as the wallet's owner and its agent call it.

interface Answer {
  node: number;
  status: number | 'connection lost';
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function api(node: Node, method: string, route: string, secret: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${node.api}${route}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { node: node.index, status: res.status, body: await res.json() };
}

interface Wallet {
  id: string;
  address: Address;
  secret: string;
}

/** A new wallet holding 1 USDG, its policy 10 pings' worth per 24 h (set through node 2: any node will do). */
async function walletWithPolicy(name: string): Promise<Wallet> {
  const { secret: mgmt } = (await callAdminSocket(nodes[0]!.dataDir, 'mgmt-credential.create', { name })) as { secret: string };
  const created = await api(nodes[0]!, 'POST', '/v1/wallets', mgmt, { externalId: name, name });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  expect(created.body.data.wallet.status).toBe('active');
  const wallet = { id: created.body.data.wallet.id, address: created.body.data.wallet.address, secret: created.body.data.credential.secret };
  await chain.fund(wallet.address, '1');
  const policy = await api(nodes[1]!, 'PUT', `/v1/wallets/${wallet.id}/policy`, mgmt, { limits: [{ window: '24h', network: NETWORK, asset: USDG_ADDRESS, amount: LIMIT.toString() }] });
  expect(policy.status, JSON.stringify(policy.body)).toBe(200);
  return wallet;
}

const payBody = () => ({ url: `${nodes[0]!.api}/x402-test/ping`, maxPayment: { network: NETWORK, asset: USDG_ADDRESS, amount: PRICE.toString() } });

/** One pay-and-call through `node`; a connection the node dropped (killed under it) is an answer too. */
async function payAndCall(node: Node, wallet: Wallet): Promise<Answer> {
  counts.ops += 1;
  return api(node, 'POST', '/v1/wallets/me/pay-and-call', wallet.secret, payBody()).catch(() => ({ node: node.index, status: 'connection lost' as const, body: null }));
}

/** `calls` pay-and-calls at once, call i through node i mod 4. */
const burst = (wallet: Wallet, calls: number) => Promise.all(Array.from({ length: calls }, (_, i) => payAndCall(nodes[i % NODES]!, wallet)));

interface Payment {
  id: string;
  status: 'pending' | 'settled' | 'failed' | 'unknown';
  amount: string;
  payTo: string;
  transaction: string | null;
  error: string | null;
}

const payments = async (wallet: Wallet, node = nodes[0]!): Promise<Payment[]> => (await api(node, 'GET', '/v1/wallets/me/payments?limit=100', wallet.secret)).body.data;

/** Waits until no payment of the wallet is open (pending, unknown): the reconciler has ended each on chain. */
async function settledDown(wallet: Wallet, timeoutMs = 30_000): Promise<Payment[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const all = await payments(wallet);
    if (all.every((p) => p.status === 'settled' || p.status === 'failed')) return all;
    if (Date.now() > deadline) throw new Error(`payments still open after ${timeoutMs} ms: ${JSON.stringify(all.filter((p) => p.status !== 'settled' && p.status !== 'failed'))}`);
    await sleep(250);
  }
}

const budget = async (wallet: Wallet, node = nodes[3]!) => (await api(node, 'GET', '/v1/wallets/me/budget', wallet.secret)).body.data;

/** What the chain says the wallet paid: its Transfer logs (and the authorizations it used), and its balance. */
async function onChain(wallet: Wallet) {
  const transfers = await pub.getLogs({ address: USDG_ADDRESS, event: transferEvent, args: { from: wallet.address }, fromBlock: 0n });
  const used = await pub.getLogs({ address: USDG_ADDRESS, event: usedEvent, args: { authorizer: wallet.address }, fromBlock: 0n });
  return {
    transfers: transfers.map((t) => ({ to: t.args.to!, value: t.args.value!, tx: t.transactionHash as Hex })),
    used: used.length,
    total: transfers.reduce((sum, t) => sum + t.args.value!, 0n),
    balance: await chain.balanceOf(wallet.address),
  };
}

const tally = (answers: Answer[]) => ({
  ok: answers.filter((a) => a.status === 200),
  refused: answers.filter((a) => a.status === 409),
  lost: answers.filter((a) => a.status === 'connection lost'),
  other: answers.filter((a) => a.status !== 200 && a.status !== 409 && a.status !== 'connection lost'),
});

function expectLimitRefusals(refused: Answer[]) {
  for (const answer of refused) expect(answer.body.data, JSON.stringify(answer.body)).toMatchObject({ reason: 'policy_limit_exceeded', rule: 'limits[0]' });
}

/** Counts a scenario's ledger or chain over the limit (reported to CI before the assertion fails). */
function noteOverLimit(settled: bigint, moved: bigint, transfers: number) {
  if (settled > LIMIT || moved > LIMIT || transfers > Number(LIMIT / PRICE)) counts.violations += 1;
}

describe.skipIf(!process.env.DATABASE_URL)('wallet spend policy across four service processes (PostgreSQL)', () => {
  beforeAll(async () => {
    // The one chain: an anvil this test owns (the embedded devchain's, without a data dir), kept at the wall
    // clock every second so authorizations signed from its time are valid when they land.
    chain = new Devchain({ dataDir: null, port: 0, clockIntervalMs: 1_000 });
    await chain.start();
    pub = createPublicClient({ chain: devchainChain(chain.rpcUrl), transport: http(chain.rpcUrl), pollingInterval: 50 });
    // What the embedded chain service does for itself; against CHAIN_RPC_URL the chain must have it.
    await ensureMulticall3(pub, chain.rpcUrl);
    testDb = await openTestDatabase();
    const apiPorts: number[] = [];
    for (let i = 0; i < NODES; i++) apiPorts.push(await freePort());
    const seller = `127.0.0.1:${apiPorts[0]}`;
    const specs = await Promise.all(
      apiPorts.map(async (apiPort, index) => {
        const relayer = generatePrivateKey();
        await chain.fundGas(privateKeyToAccount(relayer).address);
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `tollgate-cluster-${index + 1}-`));
        dirs.push(dataDir);
        const env = {
          ...shared,
          TOLLGATE_DATA_DIR: dataDir,
          DATABASE_URL: testDb.url!,
          // Four nodes beside the rest of the suite on one server (max_connections 100): a smaller pool each.
          DATABASE_POOL_SIZE: '5',
          CHAIN_RPC_URL: chain.rpcUrl,
          FACILITATOR_PRIVATE_KEY: relayer,
          INDEXER_CONFIRMATIONS: '0',
          API_PORT: String(apiPort),
          FACILITATOR_PORT: '0',
          RELAY_PORT: '0',
          ASSETS_PORT: '0',
          PAY_AND_CALL_ALLOW_HOSTS: seller,
          LOG_LEVEL: 'warn',
        };
        return { index, dataDir, apiPort, env };
      }),
    );
    // A fresh database, migrated by openTestDatabase; the four nodes start together on it.
    nodes.push(...(await Promise.all(specs.map((spec) => serve(spec)))));
    mark('4 nodes up');
  }, 120_000);

  afterAll(async () => {
    await processes.stopAll();
    await chain?.stop();
    await testDb?.close();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    reportCounts('policy-cluster', counts);
  }, 60_000);

  it('50 concurrent pay-and-calls over 4 nodes: exactly 10 settle, 40 are refused, spent = limit, and the chain moved exactly that', { timeout: 90_000 }, async () => {
    const wallet = await walletWithPolicy('cluster-agent-1');
    const before = await onChain(wallet);

    const answers = await burst(wallet, CALLS);
    const { ok, refused, lost, other } = tally(answers);
    mark(`burst 1 answered: 200 by node index ${JSON.stringify(ok.map((a) => a.node))}, ${refused.length} refused`);
    expect(other.map((a) => [a.node, a.status, a.body])).toEqual([]);
    expect(lost).toHaveLength(0);
    expect(ok).toHaveLength(10);
    expect(refused).toHaveLength(40);
    expectLimitRefusals(refused);
    for (const answer of ok) expect(answer.body.data.upstream).toMatchObject({ status: 200, body: { message: 'paid pong' } });

    // The ledger: ten rows (a refusal records nothing), all settled, each the payment a 200 named.
    const ledger = await settledDown(wallet);
    const settled = ledger.filter((p) => p.status === 'settled');
    expect(ledger.map((p) => p.status)).toEqual(Array(10).fill('settled'));
    expect(settled.map((p) => p.id).sort()).toEqual(ok.map((a) => a.body.data.payment.id).sort());
    expect(await budget(wallet)).toEqual([expect.objectContaining({ window: '24h', amount: '1000', spent: '1000', reserved: '0', remaining: '0' })]);

    // The chain: exactly ten transfers of 100 to the ping's payTo, the very transactions the ledger names.
    const after = await onChain(wallet);
    noteOverLimit(settled.reduce((sum, p) => sum + BigInt(p.amount), 0n), before.balance - after.balance, after.transfers.length);
    expect(before.transfers).toHaveLength(0); // funding is a mint: from the zero address
    expect(after.transfers).toHaveLength(10);
    expect(after.used).toBe(10);
    expect(after.transfers.every((t) => t.to === payTo && t.value === PRICE)).toBe(true);
    expect(after.transfers.map((t) => t.tx).sort()).toEqual(settled.map((p) => p.transaction).sort());
    expect(before.balance - after.balance).toBe(LIMIT);
  });

  it('the same burst with one node SIGKILLed mid-flight and restarted: never over the limit, every 200 settled, the freed budget spent exactly once more', { timeout: 120_000 }, async () => {
    const wallet = await walletWithPolicy('cluster-agent-2');
    const before = await onChain(wallet);
    const rows = async () => (await testDb.database.db.select({ n: count() }).from(walletPayments).where(eq(walletPayments.walletId, wallet.id)))[0]!.n;

    // The kill lands once reservations exist, while the burst is in flight (the victim's calls with it).
    const victim = nodes[VICTIM]!;
    const answersPromise = burst(wallet, CALLS);
    const deadline = Date.now() + 20_000;
    while ((await rows()) < 3 && Date.now() < deadline) await sleep(5);
    mark(`killing node ${VICTIM + 1} at ${await rows()} payment rows`);
    await kill9(victim);
    counts.kills += 1;
    // Restarted at once on the same configuration, as a supervisor would, while the burst goes on.
    const restarted = serve(victim);
    const answers = await answersPromise;
    mark(`burst 2 answered, [node index, status]: ${JSON.stringify(answers.map((a) => [a.node, a.status]))}`);
    nodes[VICTIM] = await restarted;
    mark(`node ${VICTIM + 1} restarted`);

    const { ok, refused, lost, other } = tally(answers);
    counts.lostAnswers += lost.length;
    // Only the victim's calls lose their answer; every other call is paid or refused by the policy.
    expect(lost.every((a) => a.node === VICTIM)).toBe(true);
    expect(other.map((a) => [a.node, a.status, a.body])).toEqual([]);
    expectLimitRefusals(refused);
    expect(ok.length).toBeLessThanOrEqual(10);

    // Whatever the victim reserved and never sent can no longer move money once the chain's time passes its
    // validBefore (PAY_AND_CALL_AUTHORIZATION_SECONDS, 120 s by default): the reconciler then fails it.
    await sleep(1_000); // a paid retry the victim sent before dying is settled by node 1 meanwhile
    await chainRpc('evm_increaseTime', [200]);
    await chainRpc('evm_mine', []);
    const ledger = await settledDown(wallet);
    mark(`ledger after the crash: ${JSON.stringify(ledger.map((p) => [p.status, p.error]))}`);
    const settled = ledger.filter((p) => p.status === 'settled');
    const answered = new Set(ok.map((a) => a.body.data.payment.id));
    counts.killedInFlight += ledger.filter((p) => !answered.has(p.id)).length;
    counts.releasedReservations += ledger.filter((p) => p.status === 'failed').length;
    const spent = settled.reduce((sum, p) => sum + BigInt(p.amount), 0n);
    const after = await onChain(wallet);
    noteOverLimit(spent, before.balance - after.balance, after.transfers.length);

    expect(settled.length).toBeLessThanOrEqual(10);
    expect(spent).toBeLessThanOrEqual(LIMIT);
    expect(after.transfers.length).toBeLessThanOrEqual(10);
    expect(after.total).toBeLessThanOrEqual(LIMIT);
    expect(before.balance - after.balance).toBe(after.total);
    // Every 200 answer's payment is settled; every transfer on chain is a settled payment of the ledger.
    const settledIds = new Set(settled.map((p) => p.id));
    for (const answer of ok) expect(settledIds.has(answer.body.data.payment.id), JSON.stringify(answer.body.data.payment)).toBe(true);
    expect(after.transfers.map((t) => t.tx).sort()).toEqual(settled.map((p) => p.transaction).sort());
    expect(after.used).toBe(after.transfers.length);
    expect(await budget(wallet)).toEqual([expect.objectContaining({ spent: spent.toString(), reserved: '0', remaining: (LIMIT - spent).toString() })]);

    // What the crash held is free again, and only that: a second burst over all four nodes (the restarted
    // one included) takes the budget exactly to the limit.
    const left = Number((LIMIT - spent) / PRICE);
    const again = tally(await burst(wallet, 20));
    expect(again.other.map((a) => [a.node, a.status, a.body])).toEqual([]);
    expect(again.lost).toHaveLength(0);
    expect(again.ok).toHaveLength(left);
    expect(again.refused).toHaveLength(20 - left);
    expectLimitRefusals(again.refused);
    const final = await settledDown(wallet);
    const finalSettled = final.filter((p) => p.status === 'settled');
    const end = await onChain(wallet);
    noteOverLimit(finalSettled.reduce((sum, p) => sum + BigInt(p.amount), 0n), before.balance - end.balance, end.transfers.length);
    expect(finalSettled).toHaveLength(10);
    expect(end.transfers).toHaveLength(10);
    expect(end.transfers.map((t) => t.tx).sort()).toEqual(finalSettled.map((p) => p.transaction).sort());
    expect(before.balance - end.balance).toBe(LIMIT);
    expect(await budget(wallet, nodes[VICTIM]!)).toEqual([expect.objectContaining({ spent: '1000', reserved: '0', remaining: '0' })]);
  });

  it('one Idempotency-Key sent at once through all four nodes pays once; every copy answers alike; another body is 409; a restarted node answers it from the database', { timeout: 90_000 }, async () => {
    const wallet = await walletWithPolicy('cluster-agent-idempotent');
    const before = await onChain(wallet);
    const key = `retry-${randomBytes(8).toString('hex')}`;
    const keyed = (node: Node, body: unknown = payBody()) =>
      fetch(`${node.api}/v1/wallets/me/pay-and-call`, {
        method: 'POST',
        headers: { authorization: `Bearer ${wallet.secret}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(body),
      }).then(async (res) => ({ status: res.status, replayed: res.headers.get("idempotent-replayed") === "true", body: (await res.json()) as any })); // eslint-disable-line @typescript-eslint/no-explicit-any

    const copies = await Promise.all([...nodes, ...nodes].map((node) => keyed(node)));
    expect(copies.map((c) => c.status)).toEqual(Array(copies.length).fill(200));
    expect(copies.filter((c) => !c.replayed)).toHaveLength(1);
    for (const copy of copies) expect(copy.body).toEqual(copies[0]!.body);
    expect(copies[0]!.body.data.upstream).toMatchObject({ status: 200, body: { message: 'paid pong' } });

    const other = await keyed(nodes[1]!, { ...payBody(), method: 'POST' });
    expect([other.status, other.body.data?.reason ?? other.body.code]).toContain(409);
    expect(JSON.stringify(other.body)).toContain('idempotency_conflict');

    // A restart of the node that answered first: the stored answer comes from the database.
    await kill9(nodes[VICTIM]!);
    nodes[VICTIM] = await serve(nodes[VICTIM]!);
    const afterRestart = await keyed(nodes[VICTIM]!);
    expect(afterRestart).toMatchObject({ status: 200, replayed: true, body: copies[0]!.body });

    await settledDown(wallet);
    const after = await onChain(wallet);
    expect(after.transfers).toHaveLength(1);
    expect(before.balance - after.balance).toBe(PRICE);
  });
});

async function chainRpc(method: string, params: unknown[]) {
  const response = await fetch(chain.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const answer = (await response.json()) as { error?: unknown };
  if (answer.error) throw new Error(`${method}: ${JSON.stringify(answer.error)}`);
}
