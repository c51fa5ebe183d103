import path from 'node:path';
import { z } from 'zod';

// Every environment variable Tollgate reads, with its default. Defaults live here only.
const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
const optionalUrl = z.url().optional();
const optionalString = z.string().min(1).optional();
const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const hexKey = z.string().regex(/^(0x)?[0-9a-fA-F]{64}$/, 'must be 32 bytes of hex').optional();

const envSchema = z.object({
  TOLLGATE_DATA_DIR: z.string().min(1).default('./.data'),
  HOST: z.string().min(1).default('127.0.0.1'),
  API_PORT: port(8402),
  FACILITATOR_PORT: port(8403),
  RELAY_PORT: port(8404),
  ASSETS_PORT: port(8405),
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
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SECRET_PEPPER: z.string().min(32, 'must be at least 32 characters').optional(),
  WALLET_MASTER_KEY: hexKey,
  IDENTITY_JWKS_URL: optionalUrl,
  IDENTITY_ISSUER: optionalString,
  IDENTITY_AUDIENCE: optionalString,
  PAY_AND_CALL_ALLOW_HOSTS: z.string().optional(),
  PAY_AND_CALL_MAX_BODY_BYTES: positiveInt(1024 * 1024),
  PAY_AND_CALL_TIMEOUT_MS: positiveInt(15_000),
  BUILD_COMMIT: optionalString,
  BUILD_BRANCH: optionalString,
  BUILD_TIME: optionalString,
});

export type Env = z.infer<typeof envSchema>;

export const ROLES = ['api', 'facilitator', 'relay', 'assets', 'worker'] as const;
export type Role = (typeof ROLES)[number];
export const ORIGINS = ['api', 'facilitator', 'relay', 'assets'] as const;
export type OriginName = (typeof ORIGINS)[number];

export interface Config {
  dataDir: string;
  host: string;
  ports: Record<OriginName, number> & { devchain: number };
  publicUrls: Partial<Record<OriginName, string>>;
  databaseUrl: string | null;
  databasePoolSize: number;
  chainRpcUrl: string | null;
  facilitatorUrl: string | null;
  facilitatorPrivateKey: string | null;
  logLevel: Env['LOG_LEVEL'];
  secretPepper: string | null;
  walletMasterKey: string | null;
  identity: { jwksUrl: string | null; issuer: string; audience: string };
  payAndCall: { allowHosts: string; maxBodyBytes: number; timeoutMs: number };
  build: { commit: string | null; branch: string | null; time: string | null };
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
  return {
    dataDir: path.resolve(e.TOLLGATE_DATA_DIR),
    host: e.HOST,
    ports: {
      api: e.API_PORT,
      facilitator: e.FACILITATOR_PORT,
      relay: e.RELAY_PORT,
      assets: e.ASSETS_PORT,
      devchain: e.DEVCHAIN_PORT,
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
    logLevel: e.LOG_LEVEL,
    secretPepper: e.SECRET_PEPPER ?? null,
    walletMasterKey: e.WALLET_MASTER_KEY ?? null,
    identity: {
      jwksUrl: e.IDENTITY_JWKS_URL ?? null,
      issuer: e.IDENTITY_ISSUER ?? 'tollgate-dev',
      audience: e.IDENTITY_AUDIENCE ?? 'tollgate',
    },
    payAndCall: {
      allowHosts: e.PAY_AND_CALL_ALLOW_HOSTS ?? '',
      maxBodyBytes: e.PAY_AND_CALL_MAX_BODY_BYTES,
      timeoutMs: e.PAY_AND_CALL_TIMEOUT_MS,
    },
    build: { commit: e.BUILD_COMMIT ?? null, branch: e.BUILD_BRANCH ?? null, time: e.BUILD_TIME ?? null },
  };
}

/** Embedded mode: no external chain, so the service runs its own devchain and dev helpers. */
export const isEmbeddedChain = (config: Config) => config.chainRpcUrl === null;

// An empty variable (`FOO=`) means "unset", as most operators expect.
function stripEmpty(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value !== '') out[key] = value;
  return out;
}

function trimSlash(url: string | undefined): string | undefined {
  return url?.replace(/\/+$/, '');
}
