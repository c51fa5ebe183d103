// The three model providers over their real HTTP APIs: OpenAI chat completions, Anthropic messages, and
// OpenRouter (OpenAI's shape at its own base URL), with tool use in each one's own format. Base URLs come
// with each call, so operators (and tests) can point them anywhere.

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

export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/** A tool the model may call: a JSON-schema'd function whose result goes back to it as text. */
export interface Tool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  run(input: Record<string, unknown>): Promise<string>;
}

export interface ModelReply {
  text: string;
  /** The provider's last answer as it came. */
  raw: unknown;
}

/** Default model per provider (documented in docs/agents.md). */
export const DEFAULT_MODELS = { openai: 'gpt-4o-mini', anthropic: 'claude-3-5-haiku-latest', openrouter: 'openai/gpt-4o-mini' } as const;
const MAX_OUTPUT_TOKENS = 1024;
const MAX_TOOL_ROUNDS = 4;
const TIMEOUT_MS = 60_000;

export class ProviderError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
  }
}

/** One model call's outcome, in the provider's own message format for the next round. */
interface Turn {
  text: string;
  calls: Array<{ id: string; name: string; input: Record<string, unknown> }>;
  /** The messages that record this answer and the tools' results, for the next round. */
  followUp(results: string[]): unknown[];
  raw: unknown;
  usage: Usage;
}

interface Wire {
  url(provider: ProviderCall): string;
  headers(provider: ProviderCall): Record<string, string>;
  body(messages: ChatMessage[], history: unknown[], tools: Tool[]): unknown;
  parse(raw: any): Turn; // eslint-disable-line @typescript-eslint/no-explicit-any
}

const openAiWire = (model: string): Wire => ({
  url: (provider) => `${provider.baseUrl}/chat/completions`,
  headers: (provider) => ({ authorization: `Bearer ${provider.apiKey}`, ...(provider.name === 'openrouter' ? { 'x-title': 'Tollgate agent' } : {}) }),
  body: (messages, history, tools) => ({
    model,
    messages: [...messages, ...history],
    max_tokens: MAX_OUTPUT_TOKENS,
    ...(tools.length ? { tools: tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })) } : {}),
  }),
  parse(raw) {
    const message = raw?.choices?.[0]?.message;
    if (!message) throw new ProviderError('the model provider answered without a message', 200);
    const calls = (message.tool_calls ?? []).map((call: { id: string; function: { name: string; arguments: string } }) => ({
      id: call.id,
      name: call.function.name,
      input: safeJson(call.function.arguments),
    }));
    if (calls.length === 0 && typeof message.content !== 'string') throw new ProviderError('the model provider answered without text', 200);
    return {
      text: message.content ?? '',
      calls,
      followUp: (results) => [message, ...calls.map((call: { id: string }, i: number) => ({ role: 'tool', tool_call_id: call.id, content: results[i] }))],
      raw,
      usage: { inputTokens: raw.usage?.prompt_tokens ?? 0, outputTokens: raw.usage?.completion_tokens ?? 0 },
    };
  },
});

/** Anthropic takes the system prompt apart, needs max_tokens and its API version header. */
const anthropicWire: Wire = {
  url: (provider) => `${provider.baseUrl}/messages`,
  headers: (provider) => ({ 'x-api-key': provider.apiKey, 'anthropic-version': '2023-06-01' }),
  body(messages, history, tools) {
    const system = messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n\n');
    return {
      model: DEFAULT_MODELS.anthropic,
      max_tokens: MAX_OUTPUT_TOKENS,
      ...(system ? { system } : {}),
      messages: [...messages.filter((m) => m.role !== 'system').map((m) => ({ role: m.role, content: m.content })), ...history],
      ...(tools.length ? { tools: tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })) } : {}),
    };
  },
  parse(raw) {
    const content: Array<{ type: string; text?: string; id?: string; name?: string; input?: Record<string, unknown> }> = raw?.content ?? [];
    const text = content.filter((part) => part.type === 'text').map((part) => part.text ?? '').join('');
    const calls = content.filter((part) => part.type === 'tool_use').map((part) => ({ id: part.id!, name: part.name!, input: part.input ?? {} }));
    if (!text && calls.length === 0) throw new ProviderError('the model provider answered without text', 200);
    return {
      text,
      calls,
      followUp: (results) => [
        { role: 'assistant', content },
        { role: 'user', content: calls.map((call, i) => ({ type: 'tool_result', tool_use_id: call.id, content: results[i] })) },
      ],
      raw,
      usage: { inputTokens: raw.usage?.input_tokens ?? 0, outputTokens: raw.usage?.output_tokens ?? 0 },
    };
  },
};

const wireOf = (provider: ProviderCall): Wire => (provider.name === 'anthropic' ? anthropicWire : openAiWire(DEFAULT_MODELS[provider.name]));

/**
 * A conversation turn: the model's answer to `messages`, running the tools it calls (at most a few rounds)
 * until it answers in text. Every model call goes through `gate` (the token budget); null from the gate
 * ends the turn with null.
 */
export async function converse(
  provider: ProviderCall,
  messages: ChatMessage[],
  tools: Tool[],
  gate: (call: () => Promise<Turn>) => Promise<Turn | null>,
): Promise<ModelReply | null> {
  const wire = wireOf(provider);
  const history: unknown[] = [];
  for (let round = 0; ; round += 1) {
    const offered = round < MAX_TOOL_ROUNDS ? tools : [];
    const turn = await gate(async () => wire.parse(await post(wire.url(provider), wire.headers(provider), wire.body(messages, history, offered))));
    if (!turn) return null;
    if (turn.calls.length === 0) return { text: turn.text, raw: turn.raw };
    const results = await Promise.all(
      turn.calls.map(async (call) => {
        const tool = tools.find((t) => t.name === call.name);
        if (!tool) return JSON.stringify({ error: `no tool named ${call.name}` });
        return tool.run(call.input).catch((error: unknown) => JSON.stringify({ error: (error as Error).message }));
      }),
    );
    history.push(...turn.followUp(results));
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

function safeJson(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text);
    return value && typeof value === 'object' ? value : {};
  } catch {
    return {};
  }
}
