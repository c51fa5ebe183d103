import { and, eq } from 'drizzle-orm';
import type { Config } from '../../../config.js';
import type { Clock } from '../../../platform/clock.js';
import type { Db } from '../../../platform/db.js';
import { isSafeJson, isSafeString } from '../../../platform/json-guard.js';
import { createKeySealer } from '../../../platform/master-key.js';
import { maskKey, type ModelProvider } from '../../../platform/model-providers.js';
import type { KeySealer } from '../../../platform/sealing.js';
import { agentDecision, decisionTool, type AgentDecision, type LlmAgentDefinition } from './llm-agent.js';
import { askStructured, ModelFailed, ModelLate } from './model-client.js';
import { tradingDecisions, tradingProviderKeys } from '../tables.js';

/** What an llm_agent tick records as its `decision` (docs/trading.md#llm-agents). */
export interface AgentRecord {
  kind: 'llm_agent';
  /** What was asked for, and the model the provider says answered. */
  model: { provider: ModelProvider; model: string; answeredBy: string | null };
  promptDigest: string;
  /** ok: a valid decision; invalid: the model answered outside the tool's schema; refused: the provider (or a missing key) said no; late: no answer in time. */
  outcome: 'ok' | 'invalid' | 'refused' | 'late';
  /** The tool input as the model wrote it (null when it called no tool). */
  answer: unknown;
  decision: AgentDecision | null;
  error: string | null;
  usage: { inputTokens: number; outputTokens: number } | null;
  /** Reused from an earlier tick or backtest with the same inputs: no model was called. */
  cached: boolean;
}

/** The decision of one tick's inputs, from the cache or the account's model. */
export interface AgentDecider {
  decide(request: { versionHash: string; inputsDigest: string; definition: LlmAgentDefinition; prompt: { system: string; user: string; digest: string } }): Promise<AgentRecord>;
}

/** A backtest asked for more model calls than its maxModelCalls allows. */
export class ModelCallLimit extends Error {
  override readonly name = 'ModelCallLimit';
}

/**
 * llm_agent decisions: each (version hash, inputs digest) is asked of the model once, with the account's
 * own provider key, and the answer kept (valid or not); provider failures and late answers are not kept,
 * so the next tick asks again. Keys are sealed per account and provider.
 */
export class AgentDeciders {
  readonly #sealer: KeySealer;

  constructor(
    private readonly db: Db,
    private readonly config: Config,
    private readonly clock: Clock,
  ) {
    this.#sealer = createKeySealer(config);
  }

  async setKey(accountId: string, provider: ModelProvider, apiKey: string): Promise<{ provider: ModelProvider; apiKey: string }> {
    const now = this.clock.now();
    const sealedKey = this.#sealer.seal(Buffer.from(apiKey), boundTo(accountId, provider));
    await this.db
      .insert(tradingProviderKeys)
      .values({ accountId, provider, sealedKey, keyHint: maskKey(apiKey), createdAt: now, updatedAt: now })
      .onConflictDoUpdate({ target: [tradingProviderKeys.accountId, tradingProviderKeys.provider], set: { sealedKey, keyHint: maskKey(apiKey), updatedAt: now } });
    return { provider, apiKey: maskKey(apiKey) };
  }

  async keys(accountId: string): Promise<Array<{ provider: ModelProvider; apiKey: string; updatedAt: string }>> {
    const rows = await this.db.select().from(tradingProviderKeys).where(eq(tradingProviderKeys.accountId, accountId)).orderBy(tradingProviderKeys.provider);
    return rows.map((row) => ({ provider: row.provider, apiKey: row.keyHint, updatedAt: row.updatedAt.toISOString() }));
  }

  /** A decider paying with this account's keys; `maxModelCalls` bounds the model calls it makes (a backtest's). */
  forAccount(accountId: string, maxModelCalls = Infinity): AgentDecider & { readonly modelCalls: number } {
    let modelCalls = 0;
    return {
      get modelCalls() {
        return modelCalls;
      },
      decide: async ({ versionHash, inputsDigest, definition, prompt }) => {
        const cached = await this.cached(accountId, versionHash, inputsDigest);
        if (cached) return cached;
        const { provider, model } = definition.model;
        const base = { kind: 'llm_agent' as const, model: { provider, model, answeredBy: null }, promptDigest: prompt.digest, answer: null, decision: null, usage: null, cached: false };
        const apiKey = await this.key(accountId, provider);
        if (!apiKey) return { ...base, outcome: 'refused', error: `the account has no ${provider} key (PUT /agentic-trading/accounts/${accountId}/providers)` };
        if (modelCalls >= maxModelCalls) throw new ModelCallLimit(`maxModelCalls (${maxModelCalls}) reached`);
        modelCalls += 1;
        let answer;
        try {
          answer = await askStructured({ provider, model, apiKey, baseUrl: this.config.agentProviders[provider] }, prompt.system, prompt.user, decisionTool, this.config.trading.modelTimeoutMs);
        } catch (error) {
          if (error instanceof ModelLate) return { ...base, outcome: 'late', error: error.message };
          if (error instanceof ModelFailed) return { ...base, outcome: 'refused', error: error.message };
          throw error;
        }
        // Kept as written when it is storable JSON; text cut by code points (never half a character).
        const storable = isSafeJson(answer.input);
        const checked = answer.input === null || !storable ? null : agentDecision.safeParse(answer.input);
        const said = Array.from(answer.text.replace(/\u0000/g, '')).slice(0, 300).join('');
        const record: AgentRecord = {
          ...base,
          model: { provider, model, answeredBy: isSafeString(answer.model) ? answer.model.slice(0, 200) : null },
          answer: storable ? answer.input : null,
          usage: answer.usage,
          ...(checked?.success
            ? { outcome: 'ok', decision: checked.data, error: null }
            : {
                outcome: 'invalid',
                error: checked
                  ? `the answer does not fit ${decisionTool.name}: ${checked.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`
                  : !storable
                    ? `the answer is not storable JSON (too deep, or holding NUL characters)`
                    : `the model answered without calling ${decisionTool.name}: ${said}`,
              }),
        };
        return this.keep(accountId, versionHash, inputsDigest, record);
      },
    };
  }

  private async cached(accountId: string, versionHash: string, inputsDigest: string): Promise<AgentRecord | null> {
    const [row] = await this.db
      .select({ record: tradingDecisions.record })
      .from(tradingDecisions)
      .where(and(eq(tradingDecisions.accountId, accountId), eq(tradingDecisions.versionHash, versionHash), eq(tradingDecisions.inputsDigest, inputsDigest)));
    return row ? { ...(row.record as AgentRecord), cached: true } : null;
  }

  /** The first answer for the inputs wins: a racer's kept answer is the one this call answers too. */
  private async keep(accountId: string, versionHash: string, inputsDigest: string, record: AgentRecord): Promise<AgentRecord> {
    const inserted = await this.db.insert(tradingDecisions).values({ accountId, versionHash, inputsDigest, record, createdAt: this.clock.now() }).onConflictDoNothing().returning({ versionHash: tradingDecisions.versionHash });
    if (inserted.length === 1) return record;
    return (await this.cached(accountId, versionHash, inputsDigest)) ?? record;
  }

  private async key(accountId: string, provider: ModelProvider): Promise<string | null> {
    const [row] = await this.db
      .select({ sealedKey: tradingProviderKeys.sealedKey })
      .from(tradingProviderKeys)
      .where(and(eq(tradingProviderKeys.accountId, accountId), eq(tradingProviderKeys.provider, provider)));
    return row ? this.#sealer.open(row.sealedKey, boundTo(accountId, provider)).toString() : null;
  }
}

/** The associated data an account's provider key is sealed with: the account and the provider. */
export const boundTo = (accountId: string, provider: string) => `trading-provider:${accountId}:${provider}`;
