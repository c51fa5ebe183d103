import path from 'node:path';
import { z } from 'zod';
import { classifyAddress } from './platform/ip-policy.js';

// Every environment variable Tollgate reads, with its default. Defaults live here only.
const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
const optionalUrl = z.url().optional();
const optionalString = z.string().min(1).optional();
const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
/** A price in US dollars of USDG (6 decimals at most); 0 or unset: free. */
const usdPrice = z.string().regex(/^\d{1,9}(\.\d{1,6})?$/, 'must be a dollar amount such as 0.01 (at most 6 decimals)').optional();
const basisPoints = (fallback: number) => z.coerce.number().min(0).max(10_000).default(fallback);
const decimalText = '\\d{1,12}(\\.\\d{1,18})?';
const hexKey = z.string().regex(/^(0x)?[0-9a-fA-F]{64}$/, 'must be 32 bytes of hex').optional();

const envSchema = z.object({
  TOLLGATE_DATA_DIR: z.string().min(1).default('./.data'),
  HOST: z.string().min(1).default('127.0.0.1'),
  TRUST_PROXY: z
    .string()
    .regex(/^(true|false|[0-9a-fA-F.:/,\s]+)$/, 'must be true, false or a comma-separated list of proxy addresses/CIDRs')
    .default('false'),
  API_PORT: port(8402),
  FACILITATOR_PORT: port(8403),
  RELAY_PORT: port(8404),
  ASSETS_PORT: port(8405),
  WORKER_PORT: port(8406),
  DEVCHAIN_PORT: port(8545),
  PUBLIC_BASE_URL: optionalUrl,
  PUBLIC_FACILITATOR_URL: optionalUrl,
  PUBLIC_RELAY_URL: optionalUrl,
  PUBLIC_ASSETS_URL: optionalUrl,
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATABASE_POOL_SIZE: positiveInt(10),
  CHAIN_RPC_URL: optionalUrl,
  FACILITATOR_URL: optionalUrl,
  FACILITATOR_PRIVATE_KEY: hexKey,
  FACILITATOR_PRIVATE_KEYS: z
    .string()
    .regex(/^\s*(0x)?[0-9a-fA-F]{64}\s*(,\s*(0x)?[0-9a-fA-F]{64}\s*)*$/, 'must be a comma-separated list of 32-byte hex keys')
    .optional(),
  FACILITATOR_KMS_KEY_IDS: z.string().max(4096).optional(),
  FACILITATOR_RELAYER_COUNT: z.coerce.number().int().min(1).max(64).optional(),
  FACILITATOR_REPLACE_AFTER_MS: positiveInt(20_000),
  FACILITATOR_MAX_REPLACEMENTS: z.coerce.number().int().min(0).max(50).default(5),
  FACILITATOR_BATCH_MAX_CALLS: z.coerce.number().int().min(1).max(200).default(64),
  FACILITATOR_BATCH_WAIT_MS: z.coerce.number().int().min(0).max(5_000).default(10),
  FACILITATOR_BATCH_IDLE: z.enum(['send', 'wait']).default('send'),
  FACILITATOR_LOW_GAS_WEI: z.string().regex(/^\d+$/, 'must be a whole number of wei').default('10000000000000000'),
  // An EOA's transferWithAuthorization needs 60-85k: a lower ceiling would send settlements that run out of gas.
  FACILITATOR_MAX_SETTLE_GAS: z.coerce.number().int().min(90_000).max(5_000_000).default(120_000),
  // A Permit2 settle (exact over Permit2, upto) measures ~120k for a new payee: its own ceiling, the same kind of margin.
  FACILITATOR_MAX_PERMIT2_SETTLE_GAS: z.coerce.number().int().min(130_000).max(5_000_000).default(160_000),
  // batch-settlement: a first deposit measures ~135k, a sweep ~60k; a claim ~75k for one voucher, less for each more.
  FACILITATOR_MAX_BATCH_SETTLEMENT_GAS: z.coerce.number().int().min(160_000).max(5_000_000).default(250_000),
  FACILITATOR_MAX_CLAIM_GAS_PER_VOUCHER: z.coerce.number().int().min(40_000).max(1_000_000).default(60_000),
  FACILITATOR_CONTRACT_PAYERS: z.enum(['refuse', 'allow']).default('refuse'),
  FACILITATOR_PUBLIC_GAS_FLOOR_WEI: z.string().regex(/^\d{1,40}$/, 'must be a whole number of wei').default('5000000000000000'),
  FACILITATOR_GAS_FLOOR_WEI: z.string().regex(/^\d{1,40}$/, 'must be a whole number of wei').default('1000000000000000'),
  FACILITATOR_SETTLE_LIMIT_PER_CLIENT: positiveInt(600),
  FACILITATOR_VERIFY_LIMIT_PER_CLIENT: positiveInt(6000),
  FACILITATOR_LIMIT_WINDOW_SECONDS: positiveInt(60),
  FACILITATOR_SETTLE_LIMIT_PER_PAYER: positiveInt(120),
  FACILITATOR_SETTLE_LIMIT_PER_PAY_TO: positiveInt(3000),
  FACILITATOR_SETTLE_LIMIT_PER_OWNER: positiveInt(6000),
  FACILITATOR_MIN_SETTLE_AMOUNT: z.string().regex(/^\d{1,78}$/, 'an integer number of atomic units').default('100'),
  FACILITATOR_PAY_TO_POLICY: z.enum(['any', 'registered']).optional(),
  FACILITATOR_SELLERS: z
    .string()
    .regex(/^\s*(0x[0-9a-fA-F]{40}\s*(,\s*0x[0-9a-fA-F]{40}\s*)*)?$/, 'must be a comma-separated list of 0x-prefixed 20-byte addresses')
    .optional(),
  FACILITATOR_RECONCILE_AFTER_MS: positiveInt(15_000),
  FACILITATOR_CONFIRMATION_TIMEOUT_MS: positiveInt(30_000),
  FACILITATOR_SIGNERS: z
    .string()
    .regex(/^\s*(0x[0-9a-fA-F]{40}\s*(,\s*0x[0-9a-fA-F]{40}\s*)*)?$/, 'must be a comma-separated list of 0x-prefixed 20-byte addresses')
    .optional(),
  X402_TEST_PAY_TO: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address').optional(),
  STORAGE_PAY_TO: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address').optional(),
  IPFS_API_URL: optionalUrl,
  CREDITS_PAY_TO: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address').optional(),
  CREDITS_RECONCILE_AFTER_SECONDS: positiveInt(60),
  TRADING_METERING_PAY_TO: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address').optional(),
  TRADING_PRICE_ACTIVATION_USD: usdPrice,
  TRADING_PRICE_EXECUTION_USD: usdPrice,
  TRADING_PRICE_MARKET_DATA_USD: usdPrice,
  TRADING_CHARGE_RECONCILE_AFTER_SECONDS: positiveInt(60),
  TRADING_MODEL_TIMEOUT_MS: positiveInt(20_000),
  TRADING_PROVISIONING_TIMEOUT_SECONDS: positiveInt(600),
  TRADING_VENUE: z.enum(['paper', 'ccxt']).default('paper'),
  TRADING_CCXT_EXCHANGE: optionalString,
  TRADING_CCXT_API_KEY: optionalString,
  TRADING_CCXT_SECRET: optionalString,
  TRADING_CCXT_SANDBOX: z.enum(['true', 'false']).default('true'),
  TRADING_CCXT_API_URL: optionalUrl,
  TRADING_CCXT_SYMBOLS: z
    .string()
    .regex(/^([A-Z0-9]+(-[A-Z]+)?=[A-Z0-9]+\/[A-Z0-9]+)(,[A-Z0-9]+(-[A-Z]+)?=[A-Z0-9]+\/[A-Z0-9]+)*$/, 'must be SYMBOL=BASE/QUOTE pairs separated by commas, e.g. BTC-USD=BTC/USDT')
    .optional(),
  TRADING_VENUE_TIMEOUT_MS: positiveInt(15_000),
  TRADING_MAX_PRICE_AGE_SECONDS: positiveInt(30),
  TRADING_MAX_SLIPPAGE_BPS: basisPoints(50),
  TRADING_PAPER_MAKER_FEE_BPS: basisPoints(2),
  TRADING_PAPER_TAKER_FEE_BPS: basisPoints(10),
  TRADING_PAPER_SLIPPAGE_BPS: basisPoints(5),
  TRADING_PAPER_MARKETS: z
    .string()
    .regex(new RegExp(`^[A-Z0-9]+(-[A-Z]+)?=${decimalText}/${decimalText}/${decimalText}(,[A-Z0-9]+(-[A-Z]+)?=${decimalText}/${decimalText}/${decimalText})*$`), 'must be SYMBOL=lot/tick/minNotional triples separated by commas, e.g. BTC-USD=0.00001/0.01/5')
    .refine((spec) => spec.split(',').every((pair) => pair.split('=')[1]!.split('/').slice(0, 2).every((step) => Number(step) > 0)), 'lot and tick sizes must be above zero')
    .optional(),
  CREDITS_SWEEP_INTERVAL_MS: positiveInt(15_000),
  AGENT_RUNTIME_PROVIDER: z.enum(['local', 'fly']).default('local'),
  FLY_API_URL: z.url().default('https://api.machines.dev'),
  FLY_API_TOKEN: optionalString,
  FLY_ORG_SLUG: optionalString,
  FLY_REGION: z.string().regex(/^[a-z]{3}$/, 'must be a three-letter Fly region code').default('iad'),
  /** Where a Fly runtime answers, `{app}` standing for its app name: the app's public IPs route <app>.fly.dev to its machine. */
  FLY_APP_URL: z
    .string()
    .refine((value) => value.includes('{app}'), 'must contain {app}, where the app name goes (e.g. https://{app}.fly.dev)')
    .refine((value) => {
      const example = value.replaceAll('{app}', 'agent-app');
      if (!URL.canParse(example)) return false;
      const url = new URL(example);
      return (url.protocol === 'https:' || url.protocol === 'http:') && !url.search && !url.hash && !url.username && !url.password;
    }, 'must be an http(s) URL without query, fragment or credentials (the runtime\'s paths are appended to it)')
    .default('https://{app}.fly.dev'),
  AGENT_RUNTIME_IMAGE: optionalString,
  AGENT_OPENAI_BASE_URL: z.url().default('https://api.openai.com/v1'),
  AGENT_ANTHROPIC_BASE_URL: z.url().default('https://api.anthropic.com/v1'),
  AGENT_OPENROUTER_BASE_URL: z.url().default('https://openrouter.ai/api/v1'),
  AGENT_WITHDRAW_MIN_AMOUNT: z.string().regex(/^\d{1,30}$/, 'an integer number of atomic units').default('10000'),
  AGENT_WITHDRAW_LIMIT_PER_HOUR: positiveInt(10),
  STORAGE_SWEEP_INTERVAL_MS: positiveInt(15_000),
  STORAGE_RECONCILE_AFTER_SECONDS: positiveInt(60),
  RELAY_IDEMPOTENCY_RETENTION_HOURS: positiveInt(72),
  RELAY_IDEMPOTENCY_CAPACITY_PER_PAYER: positiveInt(100_000),
  RELAY_BROADCAST_LIMIT_PER_CLIENT: positiveInt(600),
  RELAY_VALIDATE_LIMIT_PER_CLIENT: positiveInt(6000),
  RELAY_LIMIT_WINDOW_SECONDS: positiveInt(60),
  RELAY_TAKEOVER_AFTER_SECONDS: positiveInt(180),
  IDEMPOTENCY_RETENTION_HOURS: positiveInt(24),
  IDEMPOTENCY_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(10_000),
  IDEMPOTENCY_LEASE_SECONDS: positiveInt(60),
  DB_WATCHDOG_INTERVAL_MS: positiveInt(5_000),
  DB_WATCHDOG_FAILURES: positiveInt(3),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SECRET_PEPPER: z.string().min(32, 'must be at least 32 characters').optional(),
  SECRET_PEPPER_PREVIOUS: z.string().min(32, 'must be at least 32 characters').optional(),
  ALLOW_DEV_KEYS: z.enum(['0', '1']).default('0'),
  ALLOW_DEV_IDENTITY: z.enum(['0', '1']).default('0'),
  WALLET_MASTER_KEY: hexKey,
  WALLET_MASTER_KEY_PREVIOUS: hexKey,
  WALLET_KEY_PROVIDER: z.enum(['local', 'aws-kms']).default('local'),
  AWS_REGION: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'must be an AWS region such as eu-west-1').optional(),
  AWS_KMS_ENDPOINT: optionalUrl,
  AWS_ACCESS_KEY_ID: optionalString,
  AWS_SECRET_ACCESS_KEY: optionalString,
  AWS_SESSION_TOKEN: optionalString,
  IDENTITY_JWKS_URL: optionalUrl,
  IDENTITY_ISSUER: optionalString,
  IDENTITY_AUDIENCE: optionalString,
  IDENTITY_OIDC_ISSUER: optionalUrl,
  IDENTITY_OIDC_CLIENT_ID: z.string().regex(/^[\x21-\x7E]{1,200}$/, 'must be 1-200 printable characters without spaces').optional(),
  IDENTITY_OIDC_SCOPE: z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/, 'must be scope names separated by single spaces').optional(),
  IDENTITY_OIDC_TOKEN: z.enum(['id_token', 'access_token']).optional(),
  PAY_AND_CALL_ALLOW_HOSTS: z.string().optional(),
  PAY_AND_CALL_MAX_BODY_BYTES: positiveInt(1024 * 1024),
  PAY_AND_CALL_TIMEOUT_MS: positiveInt(15_000),
  PAY_AND_CALL_AUTHORIZATION_SECONDS: z.coerce.number().int().min(10).max(3600).default(120),
  INTENT_LIFETIME_SECONDS: positiveInt(24 * 3600),
  INTENT_PAY_TIMEOUT_SECONDS: positiveInt(300),
  INTENT_PAY_LIMIT_PER_INTENT: positiveInt(30),
  INTENT_PAY_LIMIT_PER_CLIENT: positiveInt(120),
  INTENT_PAY_LIMIT_WINDOW_SECONDS: positiveInt(60),
  INTENT_RECONCILE_INTERVAL_MS: positiveInt(15_000),
  INTENT_RECONCILE_GRACE_SECONDS: positiveInt(60),
  ATTESTATION_PRIVATE_KEY: hexKey,
  INDEXER_CONFIRMATIONS: z.coerce.number().int().min(0).max(10_000).optional(),
  INDEXER_START_BLOCK: z.union([z.literal('latest'), z.coerce.number().int().min(0)]).optional(),
  INDEXER_POLL_MS: positiveInt(1000),
  INDEXER_BATCH_BLOCKS: positiveInt(2000),
  BUILD_COMMIT: optionalString,
  BUILD_BRANCH: optionalString,
  BUILD_TIME: optionalString,
});

export type Env = z.infer<typeof envSchema>;

export const ROLES = ['api', 'facilitator', 'relay', 'assets', 'worker'] as const;
export type Role = (typeof ROLES)[number];
export const ORIGINS = ['api', 'facilitator', 'relay', 'assets'] as const;
export type OriginName = (typeof ORIGINS)[number];
/**
 * What a process listens as: its origins, or on a node that runs none (`--roles worker`), the worker's own
 * listener on WORKER_PORT, which serves only /health, /ready and /metrics.
 */
export type ListenerName = OriginName | 'worker';

export interface Config {
  /** Dev keys this configuration would use beside a shared database or a real chain (serve refuses them; see devKeyProblems). */
  devKeyProblems: string[];
  /** The dev identity issuer on a listen address other machines may reach (serve refuses it; see devIdentityProblems). */
  devIdentityProblems: string[];
  dataDir: string;
  host: string;
  /** Whose X-Forwarded-For to believe for the client address (rate limits): Fastify's trustProxy. */
  trustProxy: boolean | string;
  ports: Record<OriginName, number> & { devchain: number; worker: number };
  publicUrls: Partial<Record<OriginName, string>>;
  databaseUrl: string | null;
  databasePoolSize: number;
  chainRpcUrl: string | null;
  facilitatorUrl: string | null;
  facilitatorPrivateKey: string | null;
  /**
   * The relayer pool's keys: FACILITATOR_PRIVATE_KEYS, or FACILITATOR_PRIVATE_KEY as a pool of one;
   * empty = dev keys generated into the data dir (embedded devchain only, FACILITATOR_RELAYER_COUNT of them).
   */
  facilitatorPrivateKeys: string[];
  /** Relayer keys held in AWS KMS (FACILITATOR_KMS_KEY_IDS), with the wallets' KMS settings; none when empty. */
  facilitatorKmsKeyIds: string[];
  /** Dev keys the embedded devchain generates when no key is given (default 1). */
  facilitatorRelayerCount: number;
  /** Stuck settlement transactions: replaced after `replaceAfterMs` unmined, up to `maxReplacements` times. */
  facilitatorReplacement: { replaceAfterMs: number; maxReplacements: number };
  /** Settlement batches per relayer lane: closed at `maxCalls` calls or `waitMs` after the first (maxCalls 1: no batching); `idle` see BatchPolicy. */
  facilitatorBatch: { maxCalls: number; waitMs: number; idle: 'send' | 'wait' };
  /** A relayer key below this balance is reported low on gas (relayerStatus). */
  facilitatorLowGasWei: bigint;
  /**
   * Gas is money: no settlement leaves with a gas limit above `maxSettleGas`; payers with code are refused
   * or allowed (under the ceiling); below `publicFloorWei` of float (all relayer keys together) the public
   * /settle and the relay stop, below `floorWei` every settle does.
   */
  facilitatorGas: {
    maxSettleGas: bigint;
    maxPermit2SettleGas: bigint;
    maxBatchSettlementGas: bigint;
    maxClaimGasPerVoucher: bigint;
    contractPayers: 'refuse' | 'allow';
    publicFloorWei: bigint;
    floorWei: bigint;
  };
  /**
   * Limits on the public facilitator origin (fixed windows of windowSeconds): /settle and /verify per
   * client address, and settles of verified payments per payer and per payTo (in PostgreSQL).
   */
  facilitatorLimits: {
    settlePerClient: number;
    verifyPerClient: number;
    settlePerPayer: number;
    settlePerPayTo: number;
    /** Per user who owns the merchants paid at a payTo: more merchants do not buy more settles. */
    settlePerOwner: number;
    windowSeconds: number;
    /** Atomic units: the public origin settles nothing smaller (each settle costs our gas). */
    minSettleAmount: bigint;
  };
  /**
   * Which payTo the public facilitator origin serves: `any`, or `registered` (enabled merchants, the
   * sellers listed here, X402_TEST_PAY_TO). Default: `any` on the embedded devchain, `registered` with CHAIN_RPC_URL.
   */
  facilitatorPayTo: { policy: 'any' | 'registered'; sellers: string[] };
  /** Open settlements untouched this long are the reconciler's (their settle died or gave up). */
  facilitatorReconcileAfterMs: number;
  /** How long one settle waits for its receipt before answering settlement_pending. */
  facilitatorConfirmationTimeoutMs: number;
  /**
   * Senders of an external facilitator's settlements (FACILITATOR_SIGNERS), registered with this
   * deployment's own relayers so the indexer attributes their payments too.
   */
  facilitatorSigners: string[];
  /** Receiver of the /x402-test endpoints; null = a dev receiver generated into the data dir. */
  x402TestPayTo: string | null;
  /**
   * Paid image storage. payTo receives upload payments (default on the devchain: a dev receiver key in
   * the data dir; with CHAIN_RPC_URL it must be set, else uploads are unavailable). Blocks live in the
   * data dir unless IPFS_API_URL names a Kubo node's RPC.
   */
  /**
   * The payment relay. Broadcast idempotency records: kept this long, at most this many per payer, and when
   * a lost one is taken over. Limits per client address (fixed windows of windowSeconds): broadcasts counted
   * in PostgreSQL (each may spend our relayer's gas), validates in each node's memory.
   */
  relay: {
    retentionSeconds: number;
    capacityPerPayer: number;
    takeoverAfterSeconds: number;
    limits: { broadcastPerClient: number; validatePerClient: number; windowSeconds: number };
  };
  storage: {
    payTo: string | null;
    ipfsApiUrl: string | null;
    sweepIntervalMs: number;
    /** A pending payment younger than this belongs to a live request; the worker leaves it alone. */
    reconcileAfterSeconds: number;
  };
  /** Where wallet keys live: sealed in the database under WALLET_MASTER_KEY, or held in AWS KMS (every field set). */
  walletKeys:
    | { provider: 'local' }
    | { provider: 'aws-kms'; region: string; endpoint: string; credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } };
  /**
   * Where agent runtimes run: processes on this machine, or Fly Machines (fly: every field set; `appUrl` is
   * where each runtime answers, `{app}` standing for its app name).
   */
  agentRuntimes: { provider: 'local' } | { provider: 'fly'; apiUrl: string; token: string; orgSlug: string; region: string; image: string; appUrl: string };
  /** Base URLs of the model providers agents call (the real APIs by default; tests point them at stand-ins). */
  agentProviders: { openai: string; anthropic: string; openrouter: string };
  /**
   * runtime_b wallet withdrawals, each one a transaction our relayer pays gas for: nothing smaller than
   * `minAmount` (atomic units) unless it empties the wallet, and at most `perHour` per agent (fixed hourly
   * windows counted in PostgreSQL, shared by every api node).
   */
  agentWithdrawals: { minAmount: bigint; perHour: number };
  /** Idempotency-Key records (platform/idempotency.ts): kept this long; a repeat waits this long for a running first call; its lease. */
  idempotency: { retentionSeconds: number; waitMs: number; leaseSeconds: number };
  credits: {
    /** Where top-up payments go; unset: a dev receiver key in the data dir on the devchain, else top-ups are unavailable. */
    payTo: string | null;
    /** A settling top-up younger than this belongs to a live request; the worker leaves it alone. */
    reconcileAfterSeconds: number;
    /** How often the worker looks for top-ups left settling. */
    sweepIntervalMs: number;
  };
  /**
   * Trading's optional x402 metering (docs/trading.md#payment-metering), paid by each account's agent
   * wallet. A price unset or 0 is off (the default for all); payTo: TRADING_METERING_PAY_TO, else on the
   * devchain a receiver key in the data dir.
   */
  trading: {
    metering: {
      payTo: string | null;
      pricesUsd: { activation: string | null; execution: string | null; marketData: string | null };
      /** A settling charge younger than this belongs to a live attempt; the reconciler leaves it alone. */
      reconcileAfterSeconds: number;
    };
    /** An llm_agent tick's model call gives up after this (the tick then places nothing, recorded `late`). */
    modelTimeoutMs: number;
    /** A runtime still provisioning (schedule or wallet not ready) this long after creation fails. */
    provisioningTimeoutSeconds: number;
    /** Where orders go: the paper venue, or an exchange through ccxt (docs/trading.md#live-venues-through-ccxt). */
    venue:
      | { kind: 'paper' }
      | { kind: 'ccxt'; exchange: string; apiKey: string; secret: string; sandbox: boolean; apiUrl: string | null; symbols: Record<string, string>; timeoutMs: number };
    /** A live venue's price reported longer ago than this is stale: the tick is skipped (docs/trading.md#live-venues-trade-on-their-own-prices). */
    maxPriceAgeSeconds: number;
    /** How far a live venue's quote may be from the decided price, and the room left for the fill when limits are re-checked at it, in basis points. */
    maxSlippageBps: number;
    /** How the paper venue (and every backtest) fills: fees and slippage in basis points, and rules by symbol (decimal text). */
    paper: { makerFeeBps: number; takerFeeBps: number; slippageBps: number; markets: Record<string, { lotSize: string; tickSize: string; minNotionalUsd: string }> };
  };
  /** `serve` exits with 70 after this many failed database checks in a row, one every intervalMs. */
  databaseWatchdog: { intervalMs: number; failuresBeforeExit: number };
  logLevel: Env['LOG_LEVEL'];
  secretPepper: string | null;
  /** A second pepper accepted (never written) during a rotation (docs/operations.md#key-rotation). */
  secretPepperPrevious: string | null;
  walletMasterKey: string | null;
  /** A second master key that still opens what it sealed (never seals) during a rotation. */
  walletMasterKeyPrevious: string | null;
  /**
   * Identity tokens: verified against IDENTITY_JWKS_URL (else the dev issuer's key) for `issuer` and
   * `audience`. `oidc`: the provider the dashboard signs in through (docs/web.md#signing-in), or null.
   */
  identity: { jwksUrl: string | null; issuer: string; audience: string; oidc: OidcSignIn | null };
  payAndCall: {
    allowHosts: string;
    maxBodyBytes: number;
    timeoutMs: number;
    /** A signed authorization is valid for at most this long from the chain's time (or the seller's maxTimeoutSeconds if shorter). */
    authorizationSeconds: number;
  };
  intents: IntentSettings;
  txapi: TxapiSettings;
  build: { commit: string | null; branch: string | null; time: string | null };
}

/** The dashboard's sign-in through an OpenID provider: Authorization Code with PKCE, in the browser. */
export interface OidcSignIn {
  /** Exactly as the provider spells it (an id_token's `iss` and its discovery document's `issuer` must equal it). */
  issuer: string;
  /** A public client (no secret) registered with the redirect URI `{PUBLIC_BASE_URL}/app/`. */
  clientId: string;
  scope: string;
  /** Which of the token response's tokens the API is sent. */
  token: 'id_token' | 'access_token';
}

/** Chain indexer and transaction API (see docs/txapi.md). */
export interface TxapiSettings {
  /** EIP-712 attestation key; null = a dev key generated into the data dir. */
  attestationPrivateKey: string | null;
  /** Finality depth: records publish once their block has this many blocks on top (0 on the devchain, 12 otherwise). */
  confirmations: number;
  /** First block to index with no checkpoint: 0 on the devchain, 'latest' on an external chain. */
  startBlock: number | 'latest';
  pollMs: number;
  batchBlocks: number;
}

/** Payment intents: lifetime, the challenge's payment timeout, pay rate limits, reconciliation. */
export interface IntentSettings {
  lifetimeSeconds: number;
  payTimeoutSeconds: number;
  payLimits: { perIntent: number; perClient: number; windowSeconds: number };
  reconcile: { intervalMs: number; graceSeconds: number };
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** Parses the environment into one typed Config; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(stripEmpty(env));
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`),
    );
  }
  const e = parsed.data;
  const combinationProblems = [...relayerKeyProblems(e), ...oidcProblems(e), ...venueProblems(e), ...rotationProblems(e)];
  if (combinationProblems.length > 0) throw new ConfigError(combinationProblems);
  const facilitatorPrivateKeys = e.FACILITATOR_PRIVATE_KEYS
    ? e.FACILITATOR_PRIVATE_KEYS.split(',').map((k) => k.trim())
    : e.FACILITATOR_PRIVATE_KEY
      ? [e.FACILITATOR_PRIVATE_KEY]
      : [];
  return {
    devKeyProblems: devKeyProblems(e),
    devIdentityProblems: devIdentityProblems(e),
    dataDir: path.resolve(e.TOLLGATE_DATA_DIR),
    host: e.HOST,
    trustProxy: parseTrustProxy(e.TRUST_PROXY),
    ports: {
      api: e.API_PORT,
      facilitator: e.FACILITATOR_PORT,
      relay: e.RELAY_PORT,
      assets: e.ASSETS_PORT,
      devchain: e.DEVCHAIN_PORT,
      worker: e.WORKER_PORT,
    },
    publicUrls: {
      api: trimSlash(e.PUBLIC_BASE_URL),
      facilitator: trimSlash(e.PUBLIC_FACILITATOR_URL),
      relay: trimSlash(e.PUBLIC_RELAY_URL),
      assets: trimSlash(e.PUBLIC_ASSETS_URL),
    },
    databaseUrl: e.DATABASE_URL ?? null,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    chainRpcUrl: e.CHAIN_RPC_URL ?? null,
    facilitatorUrl: trimSlash(e.FACILITATOR_URL) ?? null,
    facilitatorPrivateKey: e.FACILITATOR_PRIVATE_KEY ?? null,
    facilitatorPrivateKeys,
    facilitatorKmsKeyIds: (e.FACILITATOR_KMS_KEY_IDS ?? '').split(',').map((id) => id.trim()).filter(Boolean),
    facilitatorRelayerCount: e.FACILITATOR_RELAYER_COUNT ?? 1,
    facilitatorReplacement: { replaceAfterMs: e.FACILITATOR_REPLACE_AFTER_MS, maxReplacements: e.FACILITATOR_MAX_REPLACEMENTS },
    facilitatorBatch: { maxCalls: e.FACILITATOR_BATCH_MAX_CALLS, waitMs: e.FACILITATOR_BATCH_WAIT_MS, idle: e.FACILITATOR_BATCH_IDLE },
    facilitatorLowGasWei: BigInt(e.FACILITATOR_LOW_GAS_WEI),
    facilitatorGas: {
      maxSettleGas: BigInt(e.FACILITATOR_MAX_SETTLE_GAS),
      maxPermit2SettleGas: BigInt(e.FACILITATOR_MAX_PERMIT2_SETTLE_GAS),
      maxBatchSettlementGas: BigInt(e.FACILITATOR_MAX_BATCH_SETTLEMENT_GAS),
      maxClaimGasPerVoucher: BigInt(e.FACILITATOR_MAX_CLAIM_GAS_PER_VOUCHER),
      contractPayers: e.FACILITATOR_CONTRACT_PAYERS,
      publicFloorWei: BigInt(e.FACILITATOR_PUBLIC_GAS_FLOOR_WEI),
      floorWei: BigInt(e.FACILITATOR_GAS_FLOOR_WEI),
    },
    facilitatorReconcileAfterMs: e.FACILITATOR_RECONCILE_AFTER_MS,
    facilitatorConfirmationTimeoutMs: e.FACILITATOR_CONFIRMATION_TIMEOUT_MS,
    facilitatorSigners: (e.FACILITATOR_SIGNERS ?? '').split(',').map((a) => a.trim()).filter(Boolean),
    facilitatorLimits: {
      settlePerClient: e.FACILITATOR_SETTLE_LIMIT_PER_CLIENT,
      verifyPerClient: e.FACILITATOR_VERIFY_LIMIT_PER_CLIENT,
      settlePerPayer: e.FACILITATOR_SETTLE_LIMIT_PER_PAYER,
      settlePerPayTo: e.FACILITATOR_SETTLE_LIMIT_PER_PAY_TO,
      settlePerOwner: e.FACILITATOR_SETTLE_LIMIT_PER_OWNER,
      minSettleAmount: BigInt(e.FACILITATOR_MIN_SETTLE_AMOUNT),
      windowSeconds: e.FACILITATOR_LIMIT_WINDOW_SECONDS,
    },
    facilitatorPayTo: {
      // A public facilitator on a real chain pays gas for whoever calls it: only known sellers by default.
      policy: e.FACILITATOR_PAY_TO_POLICY ?? (e.CHAIN_RPC_URL ? 'registered' : 'any'),
      sellers: (e.FACILITATOR_SELLERS ?? '').split(',').map((a) => a.trim()).filter(Boolean),
    },
    x402TestPayTo: e.X402_TEST_PAY_TO ?? null,
    storage: {
      payTo: e.STORAGE_PAY_TO ?? null,
      ipfsApiUrl: trimSlash(e.IPFS_API_URL) ?? null,
      sweepIntervalMs: e.STORAGE_SWEEP_INTERVAL_MS,
      reconcileAfterSeconds: e.STORAGE_RECONCILE_AFTER_SECONDS,
    },
    trading: {
      metering: {
        payTo: e.TRADING_METERING_PAY_TO ?? null,
        pricesUsd: { activation: e.TRADING_PRICE_ACTIVATION_USD ?? null, execution: e.TRADING_PRICE_EXECUTION_USD ?? null, marketData: e.TRADING_PRICE_MARKET_DATA_USD ?? null },
        reconcileAfterSeconds: e.TRADING_CHARGE_RECONCILE_AFTER_SECONDS,
      },
      modelTimeoutMs: e.TRADING_MODEL_TIMEOUT_MS,
      provisioningTimeoutSeconds: e.TRADING_PROVISIONING_TIMEOUT_SECONDS,
      venue:
        e.TRADING_VENUE === 'ccxt'
          ? {
              kind: 'ccxt',
              exchange: e.TRADING_CCXT_EXCHANGE!,
              apiKey: e.TRADING_CCXT_API_KEY!,
              secret: e.TRADING_CCXT_SECRET!,
              sandbox: e.TRADING_CCXT_SANDBOX === 'true',
              apiUrl: trimSlash(e.TRADING_CCXT_API_URL) ?? null,
              symbols: Object.fromEntries((e.TRADING_CCXT_SYMBOLS ?? '').split(',').filter(Boolean).map((pair) => pair.split('=') as [string, string])),
              timeoutMs: e.TRADING_VENUE_TIMEOUT_MS,
            }
          : { kind: 'paper' },
      maxPriceAgeSeconds: e.TRADING_MAX_PRICE_AGE_SECONDS,
      maxSlippageBps: e.TRADING_MAX_SLIPPAGE_BPS,
      paper: {
        makerFeeBps: e.TRADING_PAPER_MAKER_FEE_BPS,
        takerFeeBps: e.TRADING_PAPER_TAKER_FEE_BPS,
        slippageBps: e.TRADING_PAPER_SLIPPAGE_BPS,
        markets: Object.fromEntries(
          (e.TRADING_PAPER_MARKETS ?? '').split(',').filter(Boolean).map((pair) => {
            const [symbol, rules] = pair.split('=') as [string, string];
            const [lotSize, tickSize, minNotionalUsd] = rules.split('/') as [string, string, string];
            return [symbol, { lotSize, tickSize, minNotionalUsd }];
          }),
        ),
      },
    },
    credits: { payTo: e.CREDITS_PAY_TO ?? null, reconcileAfterSeconds: e.CREDITS_RECONCILE_AFTER_SECONDS, sweepIntervalMs: e.CREDITS_SWEEP_INTERVAL_MS },
    walletKeys:
      e.WALLET_KEY_PROVIDER === 'aws-kms'
        ? {
            provider: 'aws-kms',
            region: e.AWS_REGION ?? '',
            endpoint: trimSlash(e.AWS_KMS_ENDPOINT) ?? `https://kms.${e.AWS_REGION}.amazonaws.com`,
            credentials: { accessKeyId: e.AWS_ACCESS_KEY_ID ?? '', secretAccessKey: e.AWS_SECRET_ACCESS_KEY ?? '', ...(e.AWS_SESSION_TOKEN ? { sessionToken: e.AWS_SESSION_TOKEN } : {}) },
          }
        : { provider: 'local' },
    agentRuntimes:
      e.AGENT_RUNTIME_PROVIDER === 'fly'
        ? { provider: 'fly', apiUrl: trimSlash(e.FLY_API_URL)!, token: e.FLY_API_TOKEN ?? '', orgSlug: e.FLY_ORG_SLUG ?? '', region: e.FLY_REGION, image: e.AGENT_RUNTIME_IMAGE ?? '', appUrl: trimSlash(e.FLY_APP_URL)! }
        : { provider: 'local' },
    agentProviders: {
      openai: trimSlash(e.AGENT_OPENAI_BASE_URL)!,
      anthropic: trimSlash(e.AGENT_ANTHROPIC_BASE_URL)!,
      openrouter: trimSlash(e.AGENT_OPENROUTER_BASE_URL)!,
    },
    agentWithdrawals: { minAmount: BigInt(e.AGENT_WITHDRAW_MIN_AMOUNT), perHour: e.AGENT_WITHDRAW_LIMIT_PER_HOUR },
    idempotency: { retentionSeconds: e.IDEMPOTENCY_RETENTION_HOURS * 3600, waitMs: e.IDEMPOTENCY_WAIT_MS, leaseSeconds: e.IDEMPOTENCY_LEASE_SECONDS },
    relay: {
      retentionSeconds: e.RELAY_IDEMPOTENCY_RETENTION_HOURS * 3600,
      capacityPerPayer: e.RELAY_IDEMPOTENCY_CAPACITY_PER_PAYER,
      takeoverAfterSeconds: e.RELAY_TAKEOVER_AFTER_SECONDS,
      limits: { broadcastPerClient: e.RELAY_BROADCAST_LIMIT_PER_CLIENT, validatePerClient: e.RELAY_VALIDATE_LIMIT_PER_CLIENT, windowSeconds: e.RELAY_LIMIT_WINDOW_SECONDS },
    },
    databaseWatchdog: { intervalMs: e.DB_WATCHDOG_INTERVAL_MS, failuresBeforeExit: e.DB_WATCHDOG_FAILURES },
    logLevel: e.LOG_LEVEL,
    secretPepper: e.SECRET_PEPPER ?? null,
    secretPepperPrevious: e.SECRET_PEPPER_PREVIOUS ?? null,
    walletMasterKey: e.WALLET_MASTER_KEY ?? null,
    walletMasterKeyPrevious: e.WALLET_MASTER_KEY_PREVIOUS ?? null,
    identity: {
      jwksUrl: e.IDENTITY_JWKS_URL ?? null,
      issuer: e.IDENTITY_ISSUER ?? 'tollgate-dev',
      audience: e.IDENTITY_AUDIENCE ?? 'tollgate',
      oidc:
        e.IDENTITY_OIDC_ISSUER && e.IDENTITY_OIDC_CLIENT_ID
          ? { issuer: e.IDENTITY_OIDC_ISSUER, clientId: e.IDENTITY_OIDC_CLIENT_ID, scope: e.IDENTITY_OIDC_SCOPE ?? 'openid', token: e.IDENTITY_OIDC_TOKEN ?? 'id_token' }
          : null,
    },
    payAndCall: {
      allowHosts: e.PAY_AND_CALL_ALLOW_HOSTS ?? '',
      maxBodyBytes: e.PAY_AND_CALL_MAX_BODY_BYTES,
      timeoutMs: e.PAY_AND_CALL_TIMEOUT_MS,
      authorizationSeconds: e.PAY_AND_CALL_AUTHORIZATION_SECONDS,
    },
    intents: {
      lifetimeSeconds: e.INTENT_LIFETIME_SECONDS,
      payTimeoutSeconds: e.INTENT_PAY_TIMEOUT_SECONDS,
      payLimits: {
        perIntent: e.INTENT_PAY_LIMIT_PER_INTENT,
        perClient: e.INTENT_PAY_LIMIT_PER_CLIENT,
        windowSeconds: e.INTENT_PAY_LIMIT_WINDOW_SECONDS,
      },
      reconcile: { intervalMs: e.INTENT_RECONCILE_INTERVAL_MS, graceSeconds: e.INTENT_RECONCILE_GRACE_SECONDS },
    },
    txapi: {
      attestationPrivateKey: e.ATTESTATION_PRIVATE_KEY ?? null,
      // The devchain automines one block per transaction and never reorgs: finality depth 0 there.
      confirmations: e.INDEXER_CONFIRMATIONS ?? (e.CHAIN_RPC_URL ? 12 : 0),
      startBlock: e.INDEXER_START_BLOCK ?? (e.CHAIN_RPC_URL ? 'latest' : 0),
      pollMs: e.INDEXER_POLL_MS,
      batchBlocks: e.INDEXER_BATCH_BLOCKS,
    },
    build: { commit: e.BUILD_COMMIT ?? null, branch: e.BUILD_BRANCH ?? null, time: e.BUILD_TIME ?? null },
  };
}

/** A rotation's previous value is a second, different one: the same value twice would rotate nothing. */
function rotationProblems(e: Env): string[] {
  const problems: string[] = [];
  if (e.SECRET_PEPPER_PREVIOUS && e.SECRET_PEPPER_PREVIOUS === e.SECRET_PEPPER) problems.push('SECRET_PEPPER_PREVIOUS: the same as SECRET_PEPPER (during a rotation it is the other pepper)');
  const hex = (value: string | undefined) => value?.replace(/^0x/, '').toLowerCase();
  if (e.WALLET_MASTER_KEY_PREVIOUS && hex(e.WALLET_MASTER_KEY_PREVIOUS) === hex(e.WALLET_MASTER_KEY)) {
    problems.push('WALLET_MASTER_KEY_PREVIOUS: the same as WALLET_MASTER_KEY (during a rotation it is the other key)');
  }
  return problems;
}

/** The relayer-key variables that cannot go together. */
function relayerKeyProblems(e: Env): string[] {
  const problems: string[] = [];
  if (e.FACILITATOR_PRIVATE_KEY && e.FACILITATOR_PRIVATE_KEYS) {
    problems.push('FACILITATOR_PRIVATE_KEY and FACILITATOR_PRIVATE_KEYS are both set: use one (FACILITATOR_PRIVATE_KEYS for a pool of keys)');
  }
  if (e.FACILITATOR_PRIVATE_KEYS) {
    const keys = e.FACILITATOR_PRIVATE_KEYS.split(',').map((k) => k.trim().toLowerCase().replace(/^0x/, ''));
    if (new Set(keys).size !== keys.length) problems.push('FACILITATOR_PRIVATE_KEYS: lists a key twice (two lanes would share one nonce sequence)');
  }
  if (e.FACILITATOR_KMS_KEY_IDS && (e.FACILITATOR_PRIVATE_KEY || e.FACILITATOR_PRIVATE_KEYS || e.FACILITATOR_RELAYER_COUNT !== undefined)) {
    problems.push('FACILITATOR_KMS_KEY_IDS: the relayer keys come from KMS or from FACILITATOR_PRIVATE_KEY(S) (or generated dev keys), not both');
  }
  if (e.FACILITATOR_KMS_KEY_IDS && e.WALLET_KEY_PROVIDER !== 'aws-kms') {
    problems.push('FACILITATOR_KMS_KEY_IDS: needs WALLET_KEY_PROVIDER=aws-kms (its AWS_REGION, credentials and endpoint reach the keys)');
  }
  if (e.FACILITATOR_RELAYER_COUNT !== undefined && (e.FACILITATOR_PRIVATE_KEY || e.FACILITATOR_PRIVATE_KEYS)) {
    problems.push('FACILITATOR_RELAYER_COUNT: only for generated dev keys; with FACILITATOR_PRIVATE_KEY(S) the pool is the keys given');
  }
  if (e.WALLET_KEY_PROVIDER === 'aws-kms') {
    for (const name of ['AWS_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] as const) {
      if (!e[name]) problems.push(`${name}: required with WALLET_KEY_PROVIDER=aws-kms`);
    }
  }
  if (e.AGENT_RUNTIME_PROVIDER === 'fly') {
    for (const name of ['FLY_API_TOKEN', 'FLY_ORG_SLUG', 'AGENT_RUNTIME_IMAGE'] as const) {
      if (!e[name]) problems.push(`${name}: required with AGENT_RUNTIME_PROVIDER=fly`);
    }
  }
  if (e.FACILITATOR_RELAYER_COUNT !== undefined && e.CHAIN_RPC_URL) {
    problems.push('FACILITATOR_RELAYER_COUNT: dev keys exist on the embedded devchain only; with CHAIN_RPC_URL set FACILITATOR_PRIVATE_KEYS');
  }
  return problems;
}

/**
 * With a shared database or a real chain, the dev fallbacks are a trap: each node would hash secrets under its
 * own pepper, anyone with the CLI could mint identity tokens, attestations would be signed by a key kept in a
 * data dir, and wallet keys sealed under one. Such a node refuses to start unless told it is a development
 * setup (ALLOW_DEV_KEYS=1). On the embedded defaults (no DATABASE_URL, no CHAIN_RPC_URL) they are the point.
 */
function devKeyProblems(e: Env): string[] {
  if ((!e.DATABASE_URL && !e.CHAIN_RPC_URL) || e.ALLOW_DEV_KEYS === '1') return [];
  const missing = [
    !e.SECRET_PEPPER && 'SECRET_PEPPER',
    !e.IDENTITY_JWKS_URL && 'IDENTITY_JWKS_URL',
    e.WALLET_KEY_PROVIDER === 'local' && !e.WALLET_MASTER_KEY && 'WALLET_MASTER_KEY',
    !e.ATTESTATION_PRIVATE_KEY && 'ATTESTATION_PRIVATE_KEY',
    // Without CHAIN_RPC_URL the devchain's generated relayer keys would settle.
    !e.CHAIN_RPC_URL && !e.FACILITATOR_PRIVATE_KEY && !e.FACILITATOR_PRIVATE_KEYS && !e.FACILITATOR_KMS_KEY_IDS && 'FACILITATOR_PRIVATE_KEYS',
  ].filter((name): name is string => typeof name === 'string');
  return missing.map(
    (name) => `${name}: unset with DATABASE_URL or CHAIN_RPC_URL, so a dev key would be used; set it, or ALLOW_DEV_KEYS=1 for a development setup`,
  );
}

/**
 * Without IDENTITY_JWKS_URL the dev issuer signs identity tokens, and on the devchain its
 * POST /dev/identity/token mints one for any user to whoever reaches the api port. On loopback only this
 * machine can; on 0.0.0.0 or a public address anyone could. serve refuses that unless ALLOW_DEV_IDENTITY=1
 * says the address is reachable from this machine only all the same (compose.yaml: the container listens
 * on 0.0.0.0, its ports are published on 127.0.0.1).
 */
function devIdentityProblems(e: Env): string[] {
  if (e.IDENTITY_JWKS_URL || e.ALLOW_DEV_IDENTITY === '1' || isLoopbackHost(e.HOST)) return [];
  return [
    `HOST: ${e.HOST} is not a loopback address and IDENTITY_JWKS_URL is unset, so the dev identity issuer would mint tokens for any user to whoever reaches this node; ` +
      'set IDENTITY_JWKS_URL (your identity provider), or HOST=127.0.0.1, or ALLOW_DEV_IDENTITY=1 if only this machine can reach the address',
  ];
}

/** 127.0.0.0/8, ::1 (also IPv4-mapped) or localhost: only this machine connects. */
function isLoopbackHost(host: string): boolean {
  return host.toLowerCase() === 'localhost' || classifyAddress(host) === 'loopback';
}

const OIDC_VARIABLES = ['IDENTITY_OIDC_ISSUER', 'IDENTITY_OIDC_CLIENT_ID', 'IDENTITY_OIDC_SCOPE', 'IDENTITY_OIDC_TOKEN'] as const;

/** The dashboard's OpenID sign-in: all of it or none, and only where the API can verify what it brings back. */
function oidcProblems(e: Env): string[] {
  const set = OIDC_VARIABLES.filter((name) => e[name] !== undefined);
  if (set.length === 0) return [];
  const problems: string[] = [];
  for (const name of ['IDENTITY_OIDC_ISSUER', 'IDENTITY_OIDC_CLIENT_ID'] as const) {
    if (!e[name]) problems.push(`${name}: required with ${set.join(', ')} (the dashboard's sign-in through the identity provider needs the issuer and the client id)`);
  }
  // The provider's tokens verify only against its JWKS: without IDENTITY_JWKS_URL the dev issuer runs and refuses them.
  if (!e.IDENTITY_JWKS_URL) problems.push(`IDENTITY_JWKS_URL: required with ${set.join(', ')} (the API verifies the provider's tokens against its JWKS)`);
  const issuer = e.IDENTITY_OIDC_ISSUER;
  if (issuer) {
    const url = new URL(issuer);
    // A browser sends the authorization code and PKCE verifier there: https, but for a provider on this machine (tests, development).
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && (url.hostname === 'localhost' || classifyAddress(url.hostname) === 'loopback'))) {
      problems.push('IDENTITY_OIDC_ISSUER: must be an https URL (http only on a loopback host such as 127.0.0.1)');
    }
    if (url.search || url.hash || url.username || url.password) problems.push('IDENTITY_OIDC_ISSUER: must have no query, fragment or credentials (an OpenID issuer is a plain URL)');
  }
  const token = e.IDENTITY_OIDC_TOKEN ?? 'id_token';
  const scope = (e.IDENTITY_OIDC_SCOPE ?? 'openid').split(' ');
  // An id_token comes back only for the openid scope; its iss and aud are the provider's issuer and this client, so the API must expect exactly those.
  if (token === 'id_token') {
    if (!scope.includes('openid')) problems.push('IDENTITY_OIDC_SCOPE: must include openid with IDENTITY_OIDC_TOKEN=id_token (no id_token comes back without it)');
    if (issuer && e.IDENTITY_ISSUER !== issuer) problems.push(`IDENTITY_ISSUER: must be IDENTITY_OIDC_ISSUER (${issuer}) with IDENTITY_OIDC_TOKEN=id_token (an id_token's iss is the provider's issuer)`);
    if (e.IDENTITY_OIDC_CLIENT_ID && e.IDENTITY_AUDIENCE !== e.IDENTITY_OIDC_CLIENT_ID) {
      problems.push('IDENTITY_AUDIENCE: must be IDENTITY_OIDC_CLIENT_ID with IDENTITY_OIDC_TOKEN=id_token (an id_token\'s aud is the client id)');
    }
  }
  return problems;
}

/** Embedded mode: no external chain, so the service runs its own devchain and dev helpers. */
export const isEmbeddedChain = (config: Config) => config.chainRpcUrl === null;

// An empty variable (`FOO=`) means "unset", as most operators expect.
function stripEmpty(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value !== '') out[key] = value;
  return out;
}

/** A ccxt venue needs its exchange and its keys. */
function venueProblems(e: Env): string[] {
  if (e.TRADING_VENUE !== 'ccxt') return [];
  return (['TRADING_CCXT_EXCHANGE', 'TRADING_CCXT_API_KEY', 'TRADING_CCXT_SECRET'] as const).filter((name) => !e[name]).map((name) => `${name}: required with TRADING_VENUE=ccxt`);
}

function trimSlash(url: string | undefined): string | undefined {
  return url?.replace(/\/+$/, '');
}

function parseTrustProxy(value: string): boolean | string {
  return value === 'true' || value === 'false' ? value === 'true' : value;
}
