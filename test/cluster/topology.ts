// The cluster under test: one anvil, one PostgreSQL database, and six `tollgate serve` processes with
// production-like configuration (shared pepper, wallet master key and attestation key; one relayer key per
// facilitator; CHAIN_RPC_URL and DATABASE_URL shared): api1 → fac1 and api2 → fac2 through FACILITATOR_URL,
// and two workers. Every node has its own data dir and keeps its ports across restarts, so a restarted
// node is the same member of the cluster. Recovery windows are shortened (reconciler intervals, grace
// periods, authorization lifetimes) so the invariants can be checked a minute after the load.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import { createPublicClient, http, type Address, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { Devchain, devchainChain } from '../../src/chain/devchain.js';
import { ensureMulticall3 } from '../../src/chain/multicall3.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';
import { freePort, kill9, NodeProcesses, stop, type ServedProcess } from '../helpers/cluster-nodes.js';
import { startBalancer, type Balancer } from './balancer.js';

export type Role = 'api' | 'facilitator' | 'worker';

export interface ClusterNode {
  name: string;
  role: Role;
  dataDir: string;
  env: Record<string, string>;
  /** `up` once it printed its origins; `down` from the kill until its restart is ready. */
  state: 'up' | 'starting' | 'down';
  /** Its listener (api, facilitator), the same across restarts; null for a worker. */
  origin: string | null;
  process: ServedProcess | null;
  restarts: number;
}

export interface Receivers {
  /** X402_TEST_PAY_TO: the /x402-test/ping seller. */
  ping: Address;
  /** STORAGE_PAY_TO. */
  storage: Address;
  /** FACILITATOR_SELLERS: the seller of the public settles. */
  seller: Address;
}

export class Cluster {
  readonly nodes: ClusterNode[] = [];
  readonly processes = new NodeProcesses();
  readonly dirs: string[] = [];
  /** The relayer addresses, one per facilitator. */
  readonly relayers: Address[] = [];
  readonly attestationSigner: Address;
  private readonly attestationKey = generatePrivateKey();

  private constructor(
    readonly chain: Devchain,
    readonly pub: PublicClient,
    readonly testDb: TestDatabase,
    readonly balancer: Balancer,
    readonly receivers: Receivers,
    readonly firstBlock: bigint,
  ) {
    this.attestationSigner = privateKeyToAccount(this.attestationKey).address;
  }

  /** The chain, the database and the balancer in front of the api nodes; startNodes() adds the six nodes. */
  static async create(): Promise<Cluster> {
    // An anvil this test owns (the embedded devchain's, without a data dir), kept at the wall clock every second
    // so authorizations signed from its time are valid when they land.
    const chain = new Devchain({ dataDir: null, port: 0, clockIntervalMs: 1_000 });
    await chain.start();
    const pub = createPublicClient({ chain: devchainChain(chain.rpcUrl), transport: http(chain.rpcUrl), pollingInterval: 50 });
    await ensureMulticall3(pub, chain.rpcUrl);
    const testDb = await openTestDatabase();
    const balancer = await startBalancer();
    const address = () => privateKeyToAccount(generatePrivateKey()).address;
    return new Cluster(chain, pub, testDb, balancer, { ping: address(), storage: address(), seller: address() }, await pub.getBlockNumber());
  }

  /** The six nodes, started together on the fresh (migrated) database. */
  async startNodes(): Promise<void> {
    // One identity issuer for the deployment (the dev issuer's key in every data dir): a token works on
    // every api node, as with a real identity provider's JWKS.
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(privateKey);
    Object.assign(jwk, { kid: await calculateJwkThumbprint(jwk), alg: 'ES256', use: 'sig' });
    const shared = {
      SECRET_PEPPER: randomBytes(32).toString('hex'),
      WALLET_MASTER_KEY: randomBytes(32).toString('hex'),
      ATTESTATION_PRIVATE_KEY: this.attestationKey,
      // Only the dev identity issuer stays (nothing here needs a JWKS stand-in); every other key is set.
      ALLOW_DEV_KEYS: '1',
      DATABASE_URL: this.testDb.url!,
      // Six nodes beside the rest of the suite on one server (max_connections 100): a small pool each.
      DATABASE_POOL_SIZE: '4',
      CHAIN_RPC_URL: this.chain.rpcUrl,
      INDEXER_CONFIRMATIONS: '0',
      INDEXER_START_BLOCK: '0',
      X402_TEST_PAY_TO: this.receivers.ping,
      STORAGE_PAY_TO: this.receivers.storage,
      FACILITATOR_SELLERS: this.receivers.seller,
      PUBLIC_BASE_URL: this.balancer.origin,
      PAY_AND_CALL_ALLOW_HOSTS: this.balancer.host,
      // Short recovery windows: an authorization a dead node held expires within 20 s, and every
      // reconciler looks at open work after a few seconds instead of a minute.
      PAY_AND_CALL_AUTHORIZATION_SECONDS: '20',
      INTENT_RECONCILE_INTERVAL_MS: '1000',
      INTENT_RECONCILE_GRACE_SECONDS: '5',
      FACILITATOR_RECONCILE_AFTER_MS: '3000',
      FACILITATOR_CONFIRMATION_TIMEOUT_MS: '10000',
      STORAGE_SWEEP_INTERVAL_MS: '1000',
      STORAGE_RECONCILE_AFTER_SECONDS: '5',
      // Every client here is 127.0.0.1 (one balancer): per-client limits would count the whole load as one payer.
      INTENT_PAY_LIMIT_PER_CLIENT: '100000',
      LOG_LEVEL: 'warn',
      RELAY_PORT: '0',
      ASSETS_PORT: '0',
      // Worker-only nodes listen on WORKER_PORT (health, readiness, metrics): several run on this one machine.
      WORKER_PORT: '0',
    };
    const facPorts = [await freePort(), await freePort()];
    const apiPorts = [await freePort(), await freePort()];
    const specs: Array<Omit<ClusterNode, 'dataDir' | 'state' | 'process' | 'restarts'>> = [];
    for (const [i, port] of facPorts.entries()) {
      const relayer = generatePrivateKey();
      const relayerAddress = privateKeyToAccount(relayer).address;
      this.relayers.push(relayerAddress);
      await this.chain.fundGas(relayerAddress);
      specs.push({ name: `fac${i + 1}`, role: 'facilitator', origin: `http://127.0.0.1:${port}`, env: { ...shared, FACILITATOR_PRIVATE_KEY: relayer, FACILITATOR_PORT: String(port), API_PORT: '0' } });
    }
    for (const [i, port] of apiPorts.entries()) {
      const facilitator = `http://127.0.0.1:${facPorts[i]}`;
      specs.push({ name: `api${i + 1}`, role: 'api', origin: `http://127.0.0.1:${port}`, env: { ...shared, API_PORT: String(port), FACILITATOR_URL: facilitator, FACILITATOR_PORT: '0' } });
    }
    for (const i of [1, 2]) specs.push({ name: `worker${i}`, role: 'worker', origin: null, env: { ...shared, API_PORT: '0', FACILITATOR_PORT: '0' } });
    for (const spec of specs) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `tollgate-${spec.name}-`));
      this.dirs.push(dataDir);
      fs.mkdirSync(path.join(dataDir, 'secrets'), { mode: 0o700 });
      fs.writeFileSync(path.join(dataDir, 'secrets', 'identity-es256.jwk.json'), `${JSON.stringify(jwk)}\n`, { mode: 0o600 });
      this.nodes.push({ ...spec, dataDir, env: { ...spec.env, TOLLGATE_DATA_DIR: dataDir }, state: 'down', process: null, restarts: 0 });
    }
    this.balancer.setTargets(() => this.nodes.filter((n) => n.role === 'api' && n.state === 'up').map((n) => n.origin!));
    await Promise.all(this.nodes.map((node) => this.launch(node)));
  }

  /** Starts the node's process on its configuration; resolves once it is up. */
  async launch(node: ClusterNode): Promise<void> {
    node.state = 'starting';
    node.process = await this.processes.serve({ label: node.name, env: node.env, roles: [node.role] });
    node.state = 'up';
  }

  /** kill -9 of the node and its children. */
  async kill(node: ClusterNode): Promise<void> {
    node.state = 'down';
    await kill9(node.process!);
  }

  up(role: Role): ClusterNode[] {
    return this.nodes.filter((n) => n.role === role && n.state === 'up');
  }

  byRole(role: Role): ClusterNode[] {
    return this.nodes.filter((n) => n.role === role);
  }

  async close(): Promise<void> {
    await Promise.all(this.nodes.map((n) => (n.process ? stop(n.process).catch(() => undefined) : undefined)));
    await this.processes.stopAll();
    await this.balancer.close();
    await this.chain.stop();
    await this.testDb.close();
    for (const dir of this.dirs) fs.rmSync(dir, { recursive: true, force: true });
  }
}
