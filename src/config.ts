import { chainSettings } from './chain/settings.js';
import { agentsSettings } from './modules/agents/settings.js';
import { creditsSettings } from './modules/credits/settings.js';
import { intentsSettings } from './modules/intents/settings.js';
import { relaySettings } from './modules/relay/settings.js';
import { storageSettings } from './modules/storage/settings.js';
import { systemSettings } from './modules/system/settings.js';
import { tradingSettings } from './modules/trading/settings.js';
import { txapiSettings } from './modules/txapi/settings.js';
import { walletsSettings } from './modules/wallets/settings.js';
import { x402TestSettings } from './modules/x402-test/settings.js';
import { identitySettings } from './platform/auth/settings.js';
import { keysSettings } from './platform/keys-settings.js';
import { secretsSettings } from './platform/secrets-settings.js';
import { serverSettings } from './platform/server-settings.js';
import { composeSchema, loadSettings, type Composed, type ComposedEnv } from './platform/settings.js';
import { facilitatorSettings } from './x402/facilitator/settings.js';

// Every environment variable Tollgate reads is declared, with its default, by the settings piece of the module or
// layer it belongs to (platform/settings.ts says what a piece is). This loader composes them: one schema, parsed
// once, so a start with bad variables names every one of them together (exit 2), then each piece's checks of its
// combinations, then each piece's fields of the Config.

/**
 * The pieces, in the order their checks report. Dev keys are named in this order too: the pepper, the identity
 * issuer, the wallets' master key, the attestation key, the relayer keys.
 */
export const SETTINGS = [
  serverSettings,
  secretsSettings,
  identitySettings,
  keysSettings,
  chainSettings,
  walletsSettings,
  txapiSettings,
  facilitatorSettings,
  x402TestSettings,
  storageSettings,
  creditsSettings,
  tradingSettings,
  agentsSettings,
  relaySettings,
  intentsSettings,
  systemSettings,
] as const;

/** Every variable Tollgate reads, with its default: the docs' tables are tested against it. */
export const envSchema = composeSchema(SETTINGS);
export type Env = ComposedEnv<typeof SETTINGS>;

type Fields = Composed<typeof SETTINGS>;
export interface Config extends Fields {
  /** Dev keys this configuration would use beside a shared database or a real chain (serve refuses them; see devKeyProblems). */
  devKeyProblems: string[];
}

/** Parses the environment into one typed Config; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const { e, fields, devKeys } = loadSettings(SETTINGS, envSchema, env);
  return { ...fields, devKeyProblems: devKeyProblems(e, devKeys) };
}

/**
 * With a shared database or a real chain, the dev fallbacks are a trap: each node would hash secrets under its
 * own pepper, anyone with the CLI could mint identity tokens, attestations would be signed by a key kept in a
 * data dir, and wallet keys sealed under one. Such a node refuses to start unless told it is a development
 * setup (ALLOW_DEV_KEYS=1). On the embedded defaults (no DATABASE_URL, no CHAIN_RPC_URL) they are the point.
 * Each piece names its own variables whose dev fallback would be used (`devKeys`).
 */
function devKeyProblems(e: Env, devKeys: string[]): string[] {
  if ((!e.DATABASE_URL && !e.CHAIN_RPC_URL) || e.ALLOW_DEV_KEYS === '1') return [];
  return devKeys.map(
    (name) => `${name}: unset with DATABASE_URL or CHAIN_RPC_URL, so a dev key would be used; set it, or ALLOW_DEV_KEYS=1 for a development setup`,
  );
}
