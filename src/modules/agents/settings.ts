import { z } from 'zod';
import { atomicAmount, defineSettings, optionalString, positiveInt, trimSlash } from '../../platform/settings.js';

export interface AgentsConfig {
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
  /**
   * A running turn whose node has not renewed its heartbeat for this long died with it (database time): the sweep
   * fails it. Nodes renew every quarter of it, and the sweep looks as often.
   */
  agentTurnStaleSeconds: number;
}

/** Agents: where their runtimes run, the model providers they call, their wallets' withdrawals. */
export const agentsSettings = defineSettings({
  env: {
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
    AGENT_WITHDRAW_MIN_AMOUNT: atomicAmount(30, '10000'),
    AGENT_WITHDRAW_LIMIT_PER_HOUR: positiveInt(10),
    AGENT_TURN_STALE_SECONDS: z.coerce.number().int().min(2).max(3_600).default(20),
  },
  load: (e): AgentsConfig => ({
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
    agentTurnStaleSeconds: e.AGENT_TURN_STALE_SECONDS,
  }),
  problems: (e) =>
    e.AGENT_RUNTIME_PROVIDER !== 'fly'
      ? []
      : (['FLY_API_TOKEN', 'FLY_ORG_SLUG', 'AGENT_RUNTIME_IMAGE'] as const).filter((name) => !e[name]).map((name) => `${name}: required with AGENT_RUNTIME_PROVIDER=fly`),
});
