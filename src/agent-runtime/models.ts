// The three model providers over their real HTTP APIs: OpenAI chat completions, Anthropic messages, and
// OpenRouter (OpenAI's shape at its own base URL). Base URLs come with each call, so operators (and tests)
// can point them anywhere.

export type Role = 'system' | 'user' | 'assistant';
export interface ChatMessage {
  role: Role;
  content: string;
}

export interface ProviderCall {
  name: 'openai' | 'anthropic' | 'openrouter';
  apiKey: string;
  baseUrl: string;
}

export interface ModelReply {
  text: string;
  /** The provider's answer as it came. */
  raw: unknown;
  usage: { inputTokens: number; outputTokens: number };
}

/** Default model per provider (documented in docs/agents.md). */
export const DEFAULT_MODELS = { openai: 'gpt-4o-mini', anthropic: 'claude-3-5-haiku-latest', openrouter: 'openai/gpt-4o-mini' } as const;
const MAX_OUTPUT_TOKENS = 1024;
const TIMEOUT_MS = 60_000;

export class ProviderError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
  }
}

async function post(url: string, headers: Record<string, string>, body: unknown): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (error) {
    throw new ProviderError(`the model provider did not answer: ${(error as Error).message}`, null);
  }
  const text = await response.text();
  if (!response.ok) throw new ProviderError(`the model provider answered ${response.status}: ${text.slice(0, 300)}`, response.status);
  try {
    return JSON.parse(text);
  } catch {
    throw new ProviderError('the model provider answered with something that is not JSON', response.status);
  }
}

export async function complete(provider: ProviderCall, messages: ChatMessage[]): Promise<ModelReply> {
  if (provider.name === 'anthropic') return anthropic(provider, messages);
  const headers: Record<string, string> = { authorization: `Bearer ${provider.apiKey}` };
  if (provider.name === 'openrouter') Object.assign(headers, { 'x-title': 'Tollgate agent' });
  const raw = (await post(`${provider.baseUrl}/chat/completions`, headers, { model: DEFAULT_MODELS[provider.name], messages, max_tokens: MAX_OUTPUT_TOKENS })) as {
    choices?: Array<{ message?: { content?: string | null } }>;
    usage?: { prompt_tokens?: number; completion_tokens?: number };
  };
  const text = raw.choices?.[0]?.message?.content;
  if (typeof text !== 'string') throw new ProviderError('the model provider answered without a message', 200);
  return { text, raw, usage: { inputTokens: raw.usage?.prompt_tokens ?? 0, outputTokens: raw.usage?.completion_tokens ?? 0 } };
}

/** Anthropic takes the system prompt apart and needs max_tokens and its API version header. */
async function anthropic(provider: ProviderCall, messages: ChatMessage[]): Promise<ModelReply> {
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n\n');
  const raw = (await post(
    `${provider.baseUrl}/messages`,
    { 'x-api-key': provider.apiKey, 'anthropic-version': '2023-06-01' },
    {
      model: DEFAULT_MODELS.anthropic,
      max_tokens: MAX_OUTPUT_TOKENS,
      ...(system ? { system } : {}),
      messages: messages.filter((m) => m.role !== 'system').map((m) => ({ role: m.role, content: m.content })),
    },
  )) as { content?: Array<{ type: string; text?: string }>; usage?: { input_tokens?: number; output_tokens?: number } };
  const parts = (raw.content ?? []).filter((part) => part.type === 'text' && typeof part.text === 'string');
  if (parts.length === 0) throw new ProviderError('the model provider answered without text', 200);
  return { text: parts.map((part) => part.text).join(''), raw, usage: { inputTokens: raw.usage?.input_tokens ?? 0, outputTokens: raw.usage?.output_tokens ?? 0 } };
}
