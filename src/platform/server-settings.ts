import path from 'node:path';
import { z } from 'zod';
import { defineSettings, optionalUrl, port, positiveInt, trimSlash } from './settings.js';

export const ROLES = ['api', 'facilitator', 'relay', 'assets', 'worker'] as const;
export type Role = (typeof ROLES)[number];
export const ORIGINS = ['api', 'facilitator', 'relay', 'assets'] as const;
export type OriginName = (typeof ORIGINS)[number];
/**
 * What a process listens as: its origins, or on a node that runs none (`--roles worker`), the worker's own
 * listener on WORKER_PORT, which serves only /health, /ready and /metrics.
 */
export type ListenerName = OriginName | 'worker';

export interface ServerConfig {
  dataDir: string;
  host: string;
  /** Whose X-Forwarded-For to believe for the client address (rate limits): Fastify's trustProxy. */
  trustProxy: boolean | string;
  ports: Record<OriginName, number> & { devchain: number; worker: number };
  publicUrls: Partial<Record<OriginName, string>>;
  databaseUrl: string | null;
  databasePoolSize: number;
  /** `serve` on PGlite: V8 optimises its hot WebAssembly at start (eager), or only what runs long (deferred; src/cli/wasm-tiering.ts). */
  pgliteWasmTiering: 'eager' | 'deferred';
  /** `serve` exits with 70 after this many failed database checks in a row, one every intervalMs. */
  databaseWatchdog: { intervalMs: number; failuresBeforeExit: number };
  /** Idempotency-Key records (platform/idempotency.ts): kept this long; a repeat waits this long for a running first call; its lease. */
  idempotency: { retentionSeconds: number; waitMs: number; leaseSeconds: number };
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
}

/** The process itself: where it keeps its data, what it listens on, its database, logs and idempotency records. */
export const serverSettings = defineSettings({
  env: {
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
    PGLITE_WASM_TIERING: z.enum(['eager', 'deferred']).default('eager'),
    DB_WATCHDOG_INTERVAL_MS: positiveInt(5_000),
    DB_WATCHDOG_FAILURES: positiveInt(3),
    IDEMPOTENCY_RETENTION_HOURS: positiveInt(24),
    IDEMPOTENCY_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(10_000),
    IDEMPOTENCY_LEASE_SECONDS: positiveInt(60),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** 1: a development setup beside a shared database or real chain, dev keys allowed (see devKeyProblems in src/config.ts). */
    ALLOW_DEV_KEYS: z.enum(['0', '1']).default('0'),
  },
  load: (e): ServerConfig => ({
    dataDir: path.resolve(e.TOLLGATE_DATA_DIR),
    host: e.HOST,
    trustProxy: e.TRUST_PROXY === 'true' || e.TRUST_PROXY === 'false' ? e.TRUST_PROXY === 'true' : e.TRUST_PROXY,
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
    pgliteWasmTiering: e.PGLITE_WASM_TIERING,
    databaseWatchdog: { intervalMs: e.DB_WATCHDOG_INTERVAL_MS, failuresBeforeExit: e.DB_WATCHDOG_FAILURES },
    idempotency: { retentionSeconds: e.IDEMPOTENCY_RETENTION_HOURS * 3600, waitMs: e.IDEMPOTENCY_WAIT_MS, leaseSeconds: e.IDEMPOTENCY_LEASE_SECONDS },
    logLevel: e.LOG_LEVEL,
  }),
});
