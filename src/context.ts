import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { OriginName, Role } from './platform/server-settings.js';
import type { ChainService } from './chain/service.js';
import { AuditLog } from './platform/audit.js';
import { Authenticator } from './platform/auth/authenticator.js';
import { createIdentityVerifier, DevIdentityIssuer } from './platform/auth/identity.js';
import { MgmtCredentials } from './platform/auth/mgmt-credentials.js';
import type { Clock } from './platform/clock.js';
import { loadOrCreateDevSecret } from './platform/data-dir.js';
import type { Database, Db } from './platform/db.js';
import { pingDatabase } from './platform/db-watchdog.js';
import { RateLimiter } from './platform/rate-limiter.js';
import { Readiness } from './platform/readiness.js';
import { createMetrics, type Metrics } from './platform/metrics.js';
import { SecretHasher } from './platform/secrets.js';
import { KeyRotation } from './platform/key-rotation.js';
import { createKeySealer } from './platform/master-key.js';
import type { KeySealer } from './platform/sealing.js';
import { mgmtCredentials as mgmtCredentialsTable } from './platform/tables.js';
import { randomBytes } from 'node:crypto';
import { createX402, type X402Parts } from './x402/wiring.js';
import { Idempotency } from './platform/idempotency.js';
import { FacilitatorSignerRegistry, registerFacilitatorSigners } from './x402/signers.js';

export interface BuildInfo {
  commit: string;
  branch: string;
  buildTime: string;
}

/**
 * Services modules offer each other ("other modules call its service, never its store"). Each
 * module adds its entry by declaration merging and sets it in its factory; factories run in the
 * order of src/modules/index.ts, so a module may only use earlier modules' services at build time.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface Services {}

/** Shared services every module receives. Modules add their own services on top, never globals. */
export interface AppContext {
  services: Services;
  config: Config;
  database: Database;
  db: Db;
  clock: Clock;
  log: Logger;
  hasher: SecretHasher;
  /** The columns holding secret hashes and sealed values, and their re-keying (platform/key-rotation.ts). */
  keyRotation: KeyRotation;
  auth: Authenticator;
  devIdentity: DevIdentityIssuer | null;
  mgmtCredentials: MgmtCredentials;
  /** The append-only audit trail of operator commands and credential changes (platform/audit.ts). */
  audit: AuditLog;
  rateLimiter: RateLimiter;
  /** Idempotency-Key records of the calls that move money or buy something (platform/idempotency.ts). */
  idempotency: Idempotency;
  /** Public base URL of each origin; filled in once the listeners know their ports. */
  urls: Record<OriginName, string>;
  build: BuildInfo;
  /** Roles this process runs (empty for a CLI command run in-process). */
  roles: readonly Role[];
  /** The chain: network, asset, read client, relayer key, the devchain in embedded mode. */
  chain: ChainService;
  /** The x402 resource-server wiring every paid endpoint uses. */
  x402: X402Parts['x402'];
  /** This process's facilitator engine (null when no relayer key is configured). */
  facilitator: X402Parts['facilitator'];
  /** The checks behind `GET /ready`; parts of the process add theirs. */
  readiness: Readiness;
  /** Prometheus metrics of this process (`GET /metrics` on every origin); parts of the process add theirs. */
  metrics: Metrics;
}

export interface ContextDeps {
  config: Config;
  database: Database;
  clock: Clock;
  log: Logger;
  build: BuildInfo;
  /** Keep dev secrets (pepper, identity key) in memory instead of the data dir (tests). */
  ephemeralSecrets?: boolean;
  /** Started by the caller (startServer, the CLI), which also closes it. */
  chain: ChainService;
  roles?: readonly Role[];
}

export async function createContext(deps: ContextDeps): Promise<AppContext> {
  const { config, database, clock } = deps;
  const secretsDir = deps.ephemeralSecrets ? null : config.dataDir;
  warnAboutDevSecrets(config, deps.log, deps.ephemeralSecrets === true);
  const pepper =
    config.secretPepper ?? loadOrCreateDevSecret(secretsDir, 'pepper', () => randomBytes(32).toString('hex'));
  const hasher = new SecretHasher(pepper, config.secretPepperPrevious);
  let sealer: KeySealer | undefined;
  const keyRotation = new KeyRotation(database, hasher, () => (sealer ??= createKeySealer(config)), deps.log);
  keyRotation.hashedColumn({ name: 'mgmt_credentials.secret_hash', table: mgmtCredentialsTable, key: [mgmtCredentialsTable.id], column: mgmtCredentialsTable.secretHash });
  const devIdentity = config.identity.jwksUrl
    ? null
    : await DevIdentityIssuer.load(secretsDir, config.identity.issuer, config.identity.audience);
  const auth = new Authenticator(keyRotation, createIdentityVerifier(config.identity, devIdentity));
  const mgmtCredentials = new MgmtCredentials(database.db, hasher, clock);
  auth.register('mgmt', mgmtCredentials.resolve);
  const fallbackUrl = (origin: OriginName) => `http://${config.host}:${config.ports[origin]}`;
  const urls: Record<OriginName, string> = {
    api: config.publicUrls.api ?? fallbackUrl('api'),
    facilitator: config.publicUrls.facilitator ?? fallbackUrl('facilitator'),
    relay: config.publicUrls.relay ?? fallbackUrl('relay'),
    assets: config.publicUrls.assets ?? fallbackUrl('assets'),
  };
  const roles = deps.roles ?? [];
  // Before anything can broadcast: the indexer on any worker must know this node's signers first.
  await registerFacilitatorSigners(new FacilitatorSignerRegistry(database.db, clock), {
    network: deps.chain.network,
    relayerSigners: deps.chain.facilitatorSigners(), // every key of this node's relayer pool; none on a keyless node
    configured: config.facilitatorSigners,
  });
  const metrics = createMetrics(database);
  const x402 = createX402({ config, db: database.db, clock, log: deps.log, metrics, chain: deps.chain, roles, urls, keyedHash: (value) => hasher.keyed(value), earlierKeyedHashes: (value) => hasher.keyedCandidates(value).slice(1) });
  return {
    ...deps,
    roles,
    ...x402,
    readiness: baseReadiness(roles, database, deps.chain, x402.facilitator),
    metrics,
    services: {} as Services,
    db: database.db,
    hasher,
    keyRotation,
    auth,
    devIdentity,
    mgmtCredentials,
    audit: new AuditLog(database.db, deps.log),
    rateLimiter: new RateLimiter(database.db, clock),
    idempotency: new Idempotency(database.db, clock, config.idempotency),
    urls,
  };
}

/**
 * What every process depends on: a real query, the chain RPC answering, and the relayer's gas. The
 * database is every role's; the chain is the facilitator's (settling is its job) and the relay's (it
 * reads the chain's time and verifies on chain for every request); the relayer keys are the
 * facilitator's. An api or assets node without them still serves most routes: degraded, not unready.
 */
function baseReadiness(roles: readonly Role[], database: Database, chain: ChainService, facilitator: X402Parts['facilitator']): Readiness {
  const readiness = new Readiness(roles);
  readiness.add('database', 'every role', () => pingDatabase(database, 2_000));
  readiness.add('chain', ['facilitator', 'relay'], async () => ({ ok: true, detail: { block: Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 })) } }));
  if (facilitator) {
    readiness.add('relayer', ['facilitator'], async () => {
      const keys = await facilitator.relayerStatus();
      const low = keys.filter((key) => key.lowGas).map((key) => key.address);
      // A lane whose oldest transaction outlived every replacement: its later settles wait behind the gap.
      const stuck = keys.filter((key) => key.stuck).map((key) => key.address);
      const reasons = [low.length ? `low gas on ${low.join(', ')}` : '', stuck.length ? `nonce gap not closing on ${stuck.join(', ')}` : ''].filter(Boolean);
      return { ok: reasons.length === 0, reason: reasons.join('; ') || undefined, detail: { keys } };
    });
    // Gas is money: below the public floor the public /settle and the relay stop (degraded: our own
    // modules' settles go on); below the lower floor every settle stops (unready for the facilitator).
    const { floors } = facilitator.gasFloat;
    const floatDetail = (floatWei: bigint) => ({ floatWei: floatWei.toString(), publicFloorWei: floors.publicWei.toString(), floorWei: floors.ownWei.toString() });
    readiness.add('relayer-float', ['facilitator'], async () => {
      const floatWei = await facilitator.gasFloat.wei();
      if (floatWei >= floors.ownWei) return { ok: true, detail: floatDetail(floatWei) };
      return { ok: false, reason: `the relayer's gas float (${floatWei} wei) is below FACILITATOR_GAS_FLOOR_WEI (${floors.ownWei}): no settle is sent`, detail: floatDetail(floatWei) };
    });
    readiness.add('relayer-public-float', [], async () => {
      const floatWei = await facilitator.gasFloat.wei();
      if (floatWei >= floors.publicWei) return { ok: true, detail: floatDetail(floatWei) };
      return { ok: false, reason: `the relayer's gas float (${floatWei} wei) is below FACILITATOR_PUBLIC_GAS_FLOOR_WEI (${floors.publicWei}): the public /settle and the relay are stopped`, detail: floatDetail(floatWei) };
    });
  }
  return readiness;
}

/**
 * With a shared database or a real chain the dev fallbacks are a trap: each node would hash keys
 * under its own pepper (keys made on one node fail on another) and anyone with the CLI could mint
 * identity tokens. They still work, so a laptop against a local PostgreSQL stays easy; we say so loudly.
 */
function warnAboutDevSecrets(config: Config, log: Logger, ephemeral: boolean): void {
  if (ephemeral || (!config.databaseUrl && !config.chainRpcUrl)) return;
  if (!config.secretPepper) log.warn('SECRET_PEPPER is unset: using a per-data-dir dev pepper; every node must share one pepper');
  if (!config.identity.jwksUrl) log.warn('IDENTITY_JWKS_URL is unset: the dev identity issuer signs tokens for any user');
}
