// One structured answer from a model provider: the provider's tool mode with the one tool forced, so the
// answer is that tool's JSON input. OpenAI chat completions (and OpenRouter, the same shape at its own base
// URL) and Anthropic messages, over their real HTTP APIs, not streamed.
import type { ModelProvider } from '../../../platform/model-providers.js';

export interface ModelCall {
  provider: ModelProvider;
  model: string;
  apiKey: string;
  baseUrl: string;
}

export interface ForcedTool {
  name: string;
  description: string;
  /** JSON schema of the tool's input. */
  parameters: Record<string, unknown>;
}

export interface StructuredAnswer {
  /** The tool input the model wrote (unchecked), or null when it answered without calling the tool. */
  input: unknown;
  /** The model's text beside or instead of the call (a refusal reads here). */
  text: string;
  model: string;
  usage: { inputTokens: number; outputTokens: number };
}

/** The provider did not answer in time: nothing is known of the call's outcome, nothing is used. */
export class ModelLate extends Error {
  override readonly name = 'ModelLate';
}

/** The provider refused the call or answered outside its API (status, when it sent one). */
export class ModelFailed extends Error {
  override readonly name = 'ModelFailed';
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
  }
}

const MAX_OUTPUT_TOKENS = 1_024;

export async function askStructured(call: ModelCall, system: string, user: string, tool: ForcedTool, timeoutMs: number): Promise<StructuredAnswer> {
  const anthropic = call.provider === 'anthropic';
  const url = anthropic ? `${call.baseUrl}/messages` : `${call.baseUrl}/chat/completions`;
  const headers: Record<string, string> = anthropic
    ? { 'content-type': 'application/json', 'x-api-key': call.apiKey, 'anthropic-version': '2023-06-01' }
    : { 'content-type': 'application/json', authorization: `Bearer ${call.apiKey}`, ...(call.provider === 'openrouter' ? { 'x-title': 'Tollgate trading agent' } : {}) };
  const body = anthropic
    ? {
        model: call.model,
        max_tokens: MAX_OUTPUT_TOKENS,
        temperature: 0,
        system,
        messages: [{ role: 'user', content: user }],
        tools: [{ name: tool.name, description: tool.description, input_schema: tool.parameters }],
        tool_choice: { type: 'tool', name: tool.name },
      }
    : {
        model: call.model,
        max_tokens: MAX_OUTPUT_TOKENS,
        temperature: 0,
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: user },
        ],
        tools: [{ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } }],
        tool_choice: { type: 'function', function: { name: tool.name } },
      };
  let response: Response;
  let raw: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  try {
    response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
    raw = await response.json().catch(() => null);
  } catch (error) {
    if ((error as Error).name === 'TimeoutError') throw new ModelLate(`${call.provider} did not answer within ${timeoutMs} ms`);
    throw new ModelFailed(`${call.provider} could not be reached: ${(error as Error).message}`, null);
  }
  if (!response.ok) {
    const detail = Array.from(String(raw?.error?.message ?? raw?.message ?? '').replace(/\u0000/g, '')).slice(0, 300).join('');
    throw new ModelFailed(`${call.provider} answered ${response.status}${detail ? `: ${detail}` : ''}`, response.status);
  }
  return anthropic ? fromAnthropic(raw, tool.name, call.model) : fromOpenAi(raw, tool.name, call.model);
}

function fromOpenAi(raw: any, toolName: string, model: string): StructuredAnswer { // eslint-disable-line @typescript-eslint/no-explicit-any
  const message = raw?.choices?.[0]?.message;
  if (!message) throw new ModelFailed('the provider answered without a message', 200);
  const call = (message.tool_calls ?? []).find((c: { function?: { name?: string } }) => c.function?.name === toolName);
  let input: unknown = null;
  if (call) {
    try {
      input = JSON.parse(call.function.arguments ?? '');
    } catch {
      input = call.function.arguments ?? null; // kept as written: validation says what is wrong with it
    }
  }
  const usage = { inputTokens: raw.usage?.prompt_tokens ?? 0, outputTokens: raw.usage?.completion_tokens ?? 0 };
  return { input, text: typeof message.content === 'string' ? message.content : (message.refusal ?? ''), model: raw.model ?? model, usage };
}

function fromAnthropic(raw: any, toolName: string, model: string): StructuredAnswer { // eslint-disable-line @typescript-eslint/no-explicit-any
  const content: Array<{ type: string; text?: string; name?: string; input?: unknown }> = Array.isArray(raw?.content) ? raw.content : [];
  if (!Array.isArray(raw?.content)) throw new ModelFailed('the provider answered without content', 200);
  const use = content.find((part) => part.type === 'tool_use' && part.name === toolName);
  const text = content.filter((part) => part.type === 'text').map((part) => part.text ?? '').join('');
  const usage = { inputTokens: raw.usage?.input_tokens ?? 0, outputTokens: raw.usage?.output_tokens ?? 0 };
  return { input: use ? (use.input ?? null) : null, text, model: raw.model ?? model, usage };
}
