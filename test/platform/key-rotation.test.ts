// Key rotation without downtime (issue 48 item 2, must show): SECRET_PEPPER and WALLET_MASTER_KEY rotated on a
// cluster under load, as the runbook in docs/operations.md does it. Nodes are service instances in this process on
// one database and one chain; each runbook step starts nodes with the step's configuration and stops the older ones,
// as a rolling restart does, while a load loop keeps using every credential (and, for the master key, every wallet
// keeps paying) through whichever nodes are up. Before, during and after: every call must work. At the end the old
// value is gone from every node's configuration, and nothing in the database is under it any more.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import pino from 'pino';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { Devchain, devchainChain, USDG_ADDRESS } from '../../src/chain/devchain.js';
import { ensureMulticall3 } from '../../src/chain/multicall3.js';
import { loadConfig } from '../../src/config.js';
import { providerKeyBinding } from '../../src/modules/agents/agent-secrets.js';
import type { RotationStatus } from '../../src/platform/key-rotation.js';
import { KeySealer } from '../../src/platform/sealing.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { createPublicClient, http } from 'viem';
import { migratedDataDir, openTestDatabase, type TestDatabase } from '../helpers/database.js';
import { freePort } from '../wallets/helpers.js';

const NETWORK = 'eip155:4663';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const hex32 = () => randomBytes(32).toString('hex');

let chain: Devchain;
let testDb: TestDatabase;
let dataDir: string;
let seller: RunningServer;
let sellerPort: number;
const running = new Set<RunningServer>();

/** One node of the cluster: the api and facilitator roles, its own relayer key, the step's secrets. */
async function node(secrets: Record<string, string>, roles: Array<'api' | 'facilitator' | 'worker'> = ['api', 'facilitator']): Promise<RunningServer> {
  const relayer = generatePrivateKey();
  await chain.fundGas(privateKeyToAccount(relayer).address);
  const config = loadConfig({
    TOLLGATE_DATA_DIR: dataDir,
    ...(testDb.url ? { DATABASE_URL: testDb.url, DATABASE_POOL_SIZE: '4' } : {}),
    CHAIN_RPC_URL: chain.rpcUrl,
    FACILITATOR_PRIVATE_KEY: relayer,
    ATTESTATION_PRIVATE_KEY: ATTESTATION,
    X402_TEST_PAY_TO: SELLER_PAY_TO,
    INDEXER_CONFIRMATIONS: '0',
    PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${sellerPort}`,
    API_PORT: '0',
    FACILITATOR_PORT: '0',
    RELAY_PORT: '0',
    ASSETS_PORT: '0',
    LOG_LEVEL: 'silent',
    ...secrets,
  });
  // The data dir is shared (the dev identity issuer's key: every node verifies the same tokens); the
  // database handed in is shared too (PGlite in this process, or one PostgreSQL database).
  const server = await startServer({ config, roles, database: testDb.database, adminSocket: false, log: pino({ level: 'silent' }) });
  running.add(server);
  return server;
}

async function stopNode(server: RunningServer): Promise<void> {
  running.delete(server);
  await server.stop();
}

const ATTESTATION = generatePrivateKey();
const SELLER_PAY_TO = privateKeyToAccount(generatePrivateKey()).address;

/** A load that keeps calling while the steps run: every failure is kept, with the step it happened in. */
class Load {
  readonly failures: string[] = [];
  calls = 0;
  step = 'before';
  #stop = false;
  #loops: Promise<void>[] = [];

  constructor(
    private readonly nodes: () => RunningServer[],
    private readonly work: (server: RunningServer, i: number) => Promise<string | null>,
  ) {}

  start(concurrency: number): void {
    for (let lane = 0; lane < concurrency; lane++) {
      this.#loops.push(
        (async () => {
          while (!this.#stop) {
            const live = this.nodes();
            const i = this.calls++;
            const server = live[i % live.length]!;
            const failure = await this.work(server, i).catch((error: Error) => `threw ${error.message}`);
            if (failure) this.failures.push(`[${this.step}] ${failure}`);
            // An in-process answer may come back on microtasks alone (PGlite in memory): let timers and I/O run.
            await new Promise((resolve) => setImmediate(resolve));
          }
        })(),
      );
    }
  }

  async stop(): Promise<void> {
    this.#stop = true;
    await Promise.all(this.#loops);
  }
}

async function api(server: RunningServer, method: string, url: string, secret: string, body?: unknown) {
  const response = await server.origins.api!.inject({ method: method as 'GET', url, headers: { authorization: `Bearer ${secret}` }, ...(body === undefined ? {} : { payload: body as object }) });
  return { status: response.statusCode, body: response.json() };
}

const command = (server: RunningServer, name: string, args: Record<string, unknown> = {}) => adminCommands(server.ctx, server.modules)[name]!(args, { requestId: `test-${name}`, operator: 'test', concerns: () => {} });

beforeAll(async () => {
  chain = new Devchain({ dataDir: null, port: 0, clockIntervalMs: 1_000 });
  await chain.start();
  await ensureMulticall3(createPublicClient({ chain: devchainChain(chain.rpcUrl), transport: http(chain.rpcUrl) }), chain.rpcUrl);
  testDb = await openTestDatabase();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-rotation-'));
  // The seller every wallet pays (its /x402-test/ping), with its own port and configuration throughout.
  sellerPort = await freePort();
  const relayer = generatePrivateKey();
  await chain.fundGas(privateKeyToAccount(relayer).address);
  seller = await startServer({
    config: loadConfig({
      TOLLGATE_DATA_DIR: testDb.url ? fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-rotation-seller-')) : migratedDataDir('tollgate-rotation-seller-'),
      ...(testDb.url ? { DATABASE_URL: testDb.url, DATABASE_POOL_SIZE: '4' } : {}),
      CHAIN_RPC_URL: chain.rpcUrl,
      FACILITATOR_PRIVATE_KEY: relayer,
      ATTESTATION_PRIVATE_KEY: ATTESTATION,
      X402_TEST_PAY_TO: SELLER_PAY_TO,
      SECRET_PEPPER: hex32(),
      WALLET_MASTER_KEY: hex32(),
      API_PORT: String(sellerPort),
      FACILITATOR_PORT: '0',
      RELAY_PORT: '0',
      ASSETS_PORT: '0',
      LOG_LEVEL: 'silent',
    }),
    roles: ['api', 'facilitator'],
    database: testDb.database,
    adminSocket: false,
    log: pino({ level: 'silent' }),
  });
}, 120_000);

afterAll(async () => {
  for (const server of running) await server.stop().catch(() => undefined);
  await seller?.stop();
  await testDb?.close();
  await chain?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe('key rotation under load', () => {
  it('SECRET_PEPPER: every credential works before, during and after; the old pepper is gone at the end', { timeout: 300_000 }, async () => {
    const [P1, P2] = [hex32(), hex32()];
    const nodes: RunningServer[] = [];
    const live = () => [...nodes];
    nodes.push(await node({ SECRET_PEPPER: P1, WALLET_MASTER_KEY: hex32() }));

    // Credentials of every kind, made under the old pepper: project keys, management credentials, wallet credentials.
    const first = nodes[0]!;
    const owner = await first.ctx.devIdentity!.sign('rotation-owner');
    const credentials: Array<{ kind: string; secret: string; probe: string }> = [];
    const make = async (server: RunningServer, n: number) => {
      for (let i = 0; i < n; i++) {
        const project = await api(server, 'POST', '/v1/projects', owner, { name: `p${credentials.length}` });
        expect(project.status).toBe(201);
        credentials.push({ kind: 'project key', secret: project.body.data.apiKey.secret, probe: '/v1/event-queues' });
        const mgmt = (await command(server, 'mgmt-credential.create', { name: `m${credentials.length}` })) as { secret: string };
        credentials.push({ kind: 'mgmt', secret: mgmt.secret, probe: '/v1/wallets' });
        const wallet = await api(server, 'POST', '/v1/wallets', mgmt.secret, { externalId: `w${credentials.length}`, name: 'w' });
        expect(wallet.status).toBe(201);
        credentials.push({ kind: 'wallet', secret: wallet.body.data.credential.secret, probe: '/v1/wallets/me' });
      }
    };
    await make(first, 8);
    // Management credentials the load never uses: nothing re-hashes them on use, the command must.
    const idle: string[] = [];
    for (let i = 0; i < 20; i++) idle.push(((await command(first, 'mgmt-credential.create', { name: `idle${i}` })) as { secret: string }).secret);
    // An event lease taken under the old pepper: acked once the hashes moved, while the old pepper is still accepted
    // (a lease lives at most an hour: the runbook keeps the window open longer than that).
    const queue = await api(first, 'POST', '/v1/event-queues', credentials[0]!.secret, { name: 'rotation' });
    await api(first, 'POST', `/v1/event-queues/${queue.body.data.id}/events`, credentials[0]!.secret, { payload: { n: 1 } });
    const lease = (await api(first, 'POST', `/v1/event-queues/${queue.body.data.id}/claim`, credentials[0]!.secret, { leaseSeconds: 3600 })).body.data;
    expect(lease.leaseToken).toBeTruthy();

    const load = new Load(live, async (server, i) => {
      const credential = credentials[i % credentials.length]!;
      const answer = await api(server, 'GET', credential.probe, credential.secret);
      return answer.status === 200 ? null : `${credential.kind} ${credential.secret.slice(0, 16)}… → ${answer.status} on a node with pepper ${server.ctx.hasher.pepperId}`;
    });
    load.start(4);
    await sleep(500);

    // Step 1 (a cluster): every node learns the new pepper as an accepted one first.
    load.step = 'step 1: previous=new';
    nodes.push(await node({ SECRET_PEPPER: P1, SECRET_PEPPER_PREVIOUS: P2, WALLET_MASTER_KEY: hex32() }));
    await stopNode(nodes.shift()!);
    await sleep(300);

    // Step 2: the new pepper writes, the old one is accepted; credentials made now are under the new pepper.
    load.step = 'step 2: new, previous=old';
    nodes.push(await node({ SECRET_PEPPER: P2, SECRET_PEPPER_PREVIOUS: P1, WALLET_MASTER_KEY: hex32() }));
    await make(nodes[1]!, 2);
    await sleep(300);
    await stopNode(nodes.shift()!);

    // Step 3: re-hash in small batches while the load runs; resumable (each call continues where the last stopped).
    load.step = 'step 3: rotate-pepper';
    const rotator = nodes[0]!;
    const before = (await command(rotator, 'keys.status')) as RotationStatus;
    const underOld = before.pepper.columns.reduce((n, c) => n + c.previous, 0);
    // The load's credentials were re-hashed as it used them (the secret in hand); the idle ones wait for the command.
    expect(underOld).toBeGreaterThanOrEqual(idle.length);
    let moved = 0;
    for (let round = 0; ; round++) {
      const batch = (await command(rotator, 'keys.rotate-pepper', { batch: 5 })) as { done: number; remaining: number };
      moved += batch.done;
      if (batch.remaining === 0) break;
      expect(round).toBeLessThan(100);
    }
    // The idle credentials moved by the command; the load's by whichever came first, the command or their next use.
    expect(moved).toBeGreaterThanOrEqual(idle.length);
    expect(moved).toBeLessThanOrEqual(underOld);
    const acked = await api(rotator, 'POST', `/v1/events/${lease.event.id}/ack`, credentials[0]!.secret, { leaseToken: lease.leaseToken });
    expect(acked.status, JSON.stringify(acked.body)).toBe(200);

    // Step 4: the old pepper is removed from every node.
    load.step = 'step 4: old pepper removed';
    nodes.push(await node({ SECRET_PEPPER: P2, WALLET_MASTER_KEY: hex32() }));
    await stopNode(nodes.shift()!);
    await sleep(1_000);
    await load.stop();

    expect(load.failures, load.failures.slice(0, 10).join('\n')).toEqual([]);
    expect(load.calls).toBeGreaterThan(200);
    const after = (await command(nodes[0]!, 'keys.status')) as RotationStatus;
    expect(after.pepper.previous).toBeNull();
    for (const column of after.pepper.columns) expect(column, column.name).toMatchObject({ previous: 0, unknown: 0 });
    // Nothing is stored under the old pepper's id any more.
    const oldId = before.pepper.previous!;
    const stored = await testDb.database.query<{ n: number }>(
      sql`select (select count(*) from project_api_keys where secret_hash like ${`p1.${oldId}.%`}) + (select count(*) from wallet_credentials where secret_hash like ${`p1.${oldId}.%`}) + (select count(*) from mgmt_credentials where secret_hash like ${`p1.${oldId}.%`}) as n`,
    );
    expect(Number(stored[0]!.n)).toBe(0);
    for (const credential of credentials) expect((await api(nodes[0]!, 'GET', credential.probe, credential.secret)).status, credential.kind).toBe(200);
    for (const secret of idle) expect((await api(nodes[0]!, 'GET', '/v1/wallets', secret)).status, 'idle mgmt credential').toBe(200);
    console.log(`[key-rotation] pepper: ${load.calls} authenticated calls, ${moved} hashes re-keyed in batches of 5, 0 failures`);
    await stopNode(nodes.shift()!);
  });

  it('WALLET_MASTER_KEY: every wallet keeps paying before, during and after the re-seal; the old key is gone at the end', { timeout: 300_000 }, async () => {
    const [K1, K2] = [hex32(), hex32()];
    const pepper = hex32();
    const nodes: RunningServer[] = [await node({ SECRET_PEPPER: pepper, WALLET_MASTER_KEY: K1 })];
    const first = nodes[0]!;
    const mgmt = ((await command(first, 'mgmt-credential.create', { name: 'payer' })) as { secret: string }).secret;
    const wallets: Array<{ id: string; address: `0x${string}`; secret: string }> = [];
    const makeWallets = async (server: RunningServer, n: number) => {
      for (let i = 0; i < n; i++) {
        const created = await api(server, 'POST', '/v1/wallets', mgmt, { externalId: `payer-${wallets.length}`, name: 'payer' });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        const wallet = { id: created.body.data.wallet.id, address: created.body.data.wallet.address, secret: created.body.data.credential.secret };
        await chain.fund(wallet.address, '10');
        wallets.push(wallet);
      }
    };
    await makeWallets(first, 6);
    // Another module's sealed column: an agent's model-provider key, sealed under the old master key.
    const agentId = '00000000-0000-4000-8000-0000000000a1';
    const providerKey = `sk-${hex32()}`;
    await testDb.database.query(
      sql`insert into agent_provider_keys (agent_id, provider, sealed_key, key_hint, created_at, updated_at) values (${agentId}, 'openai', ${new KeySealer(Buffer.from(K1, 'hex')).seal(Buffer.from(providerKey), providerKeyBinding(agentId, 'openai'))}, 'sk-…', now(), now())`,
    );

    const ping = `http://127.0.0.1:${sellerPort}/x402-test/ping`;
    const load = new Load(() => [...nodes], async (server, i) => {
      const wallet = wallets[i % wallets.length]!;
      const answer = await api(server, 'POST', '/v1/wallets/me/pay-and-call', wallet.secret, { url: ping, maxPayment: { network: NETWORK, asset: USDG_ADDRESS, amount: '100' } });
      // Answered on the seller's word (pending, its transaction in settlement); the chain confirms it after.
      const ok = answer.status === 200 && answer.body.data.upstream.status === 200 && answer.body.data.payment.status === 'pending' && typeof answer.body.data.payment.settlement?.transaction === 'string';
      return ok ? null : `wallet ${wallet.id} → ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`;
    });
    load.start(3);
    await sleep(1_000);

    load.step = 'step 1: previous=new';
    nodes.push(await node({ SECRET_PEPPER: pepper, WALLET_MASTER_KEY: K1, WALLET_MASTER_KEY_PREVIOUS: K2 }));
    await stopNode(nodes.shift()!);

    load.step = 'step 2: new, previous=old';
    nodes.push(await node({ SECRET_PEPPER: pepper, WALLET_MASTER_KEY: K2, WALLET_MASTER_KEY_PREVIOUS: K1 }));
    // A wallet made now is sealed under the new key; the step-1 node (the new key accepted) pays from it too.
    await makeWallets(nodes[1]!, 2);
    await sleep(1_500);
    await stopNode(nodes.shift()!);

    load.step = 'step 3: reseal';
    const status = (await command(nodes[0]!, 'keys.status')) as RotationStatus;
    const underOld = status.masterKey.columns.reduce((n, c) => n + c.previous, 0);
    expect(underOld).toBe(6 + 1);
    for (let round = 0; ; round++) {
      const batch = (await command(nodes[0]!, 'keys.reseal', { batch: 2 })) as { done: number; remaining: number };
      if (batch.remaining === 0) break;
      expect(round).toBeLessThan(50);
      await sleep(200);
    }

    load.step = 'step 4: old key removed';
    nodes.push(await node({ SECRET_PEPPER: pepper, WALLET_MASTER_KEY: K2 }));
    await stopNode(nodes.shift()!);
    await sleep(2_000);
    await load.stop();

    expect(load.failures, load.failures.slice(0, 10).join('\n')).toEqual([]);
    expect(load.calls).toBeGreaterThan(10);
    // Every wallet pays on the node that knows only the new key.
    for (const wallet of wallets) {
      const answer = await api(nodes[0]!, 'POST', '/v1/wallets/me/pay-and-call', wallet.secret, { url: ping, maxPayment: { network: NETWORK, asset: USDG_ADDRESS, amount: '100' } });
      expect(answer.body.data?.payment?.status, JSON.stringify(answer.body)).toBe('pending');
      const id = answer.body.data.payment.id as string;
      await expect
        .poll(async () => ((await api(nodes[0]!, 'GET', '/v1/wallets/me/payments?limit=100', wallet.secret)).body.data as Array<{ id: string; status: string }>).find((p) => p.id === id)?.status, { timeout: 20_000 })
        .toBe('settled');
    }
    const after = (await command(nodes[0]!, 'keys.status')) as RotationStatus;
    // Nothing left under the old key; what was under neither before (other tests' wallets on this database) is as it was.
    for (const [i, column] of after.masterKey.columns.entries()) expect(column, column.name).toMatchObject({ previous: 0, unknown: status.masterKey.columns[i]!.unknown });
    expect(after.masterKey.columns.find((c) => c.name === 'wallets.key_ref')!.current).toBe(wallets.length);
    // The other module's value opens under the new key alone, bound to its row as before.
    const [row] = await testDb.database.query<{ sealed_key: string }>(sql`select sealed_key from agent_provider_keys where agent_id = ${agentId}`);
    expect(new KeySealer(Buffer.from(K2, 'hex')).open(row!.sealed_key, providerKeyBinding(agentId, 'openai')).toString()).toBe(providerKey);
    console.log(`[key-rotation] master key: ${load.calls} payments during the rotation, ${underOld} values re-sealed, 0 failures`);
    await stopNode(nodes.shift()!);
  });
});
