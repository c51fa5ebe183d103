// What each model takes, as its provider documents it today (docs/agents.md, "Models"): the field that caps its
// output, whether it takes a temperature (and how high), the role a system prompt goes as, the most it writes
// in one answer, and how far o200k_base's count of its input may fall short of its own tokenizer's. Matched
// by model name, first row wins; a model newer than the table that refuses a parameter by name is adapted
// once at run time (models.ts) and remembered here for the life of the process.

export interface ModelTraits {
  /** The request field of the output cap. */
  outputCap: 'max_tokens' | 'max_completion_tokens';
  /** Whether a temperature is sent (reasoning models refuse any but their default). */
  temperature: boolean;
  /** The highest temperature the model takes (Anthropic: 1). */
  maxTemperature: number;
  /** The role a system prompt goes as (OpenAI's reasoning models take `developer`). */
  systemRole: 'system' | 'developer';
  /** The most output the model writes in one answer; the cap is lowered to it. Null: not below ours. */
  maxOutputTokens: number | null;
  /** The reservation's margin over o200k_base's count of the request: 1 for OpenAI's own encodings. */
  tokenFactor: number;
}

type Provider = 'openai' | 'anthropic' | 'openrouter';

const chatModel: ModelTraits = { outputCap: 'max_tokens', temperature: true, maxTemperature: 2, systemRole: 'system', maxOutputTokens: null, tokenFactor: 1 };
/** OpenAI's reasoning models (o1, o3, o4-mini, gpt-5): `max_tokens` and `temperature` are refused. */
const reasoning: ModelTraits = { ...chatModel, outputCap: 'max_completion_tokens', temperature: false, systemRole: 'developer' };
/** Tokenizers we cannot run: o200k_base's count, and 30 % more. */
const foreign = 1.3;
const claude: ModelTraits = { ...chatModel, maxTemperature: 1, tokenFactor: foreign };

interface Row {
  provider: Provider;
  /** The model name (OpenRouter's without its `vendor/` prefix) and, on OpenRouter, the vendor. */
  model: RegExp;
  vendor?: string;
  traits: ModelTraits;
}

/** The capability table; docs/agents.md shows the same rows. */
export const MODEL_TABLE: Row[] = [
  { provider: 'openai', model: /^gpt-5(?!.*-chat)/, traits: reasoning },
  { provider: 'openai', model: /^gpt-5.*-chat/, traits: { ...chatModel, outputCap: 'max_completion_tokens' } },
  { provider: 'openai', model: /^o\d/, traits: reasoning },
  { provider: 'openai', model: /^(gpt-4o|gpt-4\.1|chatgpt-4o)/, traits: chatModel },
  // Older models count with cl100k_base, which yields more tokens than o200k_base for the same text.
  { provider: 'openai', model: /./, traits: { ...chatModel, tokenFactor: 1.25 } },
  { provider: 'anthropic', model: /^claude-3-(opus|sonnet|haiku)-/, traits: { ...claude, maxOutputTokens: 4096 } },
  { provider: 'anthropic', model: /^claude-3-5-/, traits: { ...claude, maxOutputTokens: 8192 } },
  { provider: 'anthropic', model: /./, traits: claude },
  // OpenRouter takes `max_tokens` for every model and maps it; a reasoning model's temperature is not sent.
  { provider: 'openrouter', vendor: 'openai', model: /^(o\d|gpt-5(?!.*-chat))/, traits: { ...chatModel, temperature: false } },
  { provider: 'openrouter', vendor: 'openai', model: /./, traits: chatModel },
  { provider: 'openrouter', vendor: 'anthropic', model: /^claude-3-(opus|sonnet|haiku)-/, traits: { ...claude, maxOutputTokens: 4096 } },
  { provider: 'openrouter', vendor: 'anthropic', model: /./, traits: claude },
  { provider: 'openrouter', model: /./, traits: { ...chatModel, tokenFactor: foreign } },
];

const learned = new Map<string, Partial<ModelTraits>>();

export function traitsOf(provider: Provider, model: string): ModelTraits {
  const [vendor, name] = provider === 'openrouter' && model.includes('/') ? [model.slice(0, model.indexOf('/')), model.slice(model.indexOf('/') + 1)] : [undefined, model];
  const row = MODEL_TABLE.find((r) => r.provider === provider && (r.vendor === undefined || r.vendor === vendor) && r.model.test(name));
  return { ...(row?.traits ?? chatModel), ...learned.get(`${provider}:${model}`) };
}

/** What a provider's refusal taught about a model (models.ts): used for its later calls in this process. */
export function learnTraits(provider: Provider, model: string, traits: Partial<ModelTraits>): void {
  const key = `${provider}:${model}`;
  if (learned.size >= 1000 && !learned.has(key)) learned.delete(learned.keys().next().value!);
  learned.set(key, { ...learned.get(key), ...traits });
}
