// The three model providers over their real HTTP APIs: OpenAI chat completions, Anthropic messages, and
// OpenRouter (OpenAI's shape at its own base URL), with tool use and streaming in each one's own format.
// The conversation is kept provider-neutral (Entry[]) and converted for each call, so any provider can
// continue a conversation another one started. Base URLs come with each call, so operators (and tests) can
// point them anywhere.
import { serverSentEvents, type ServerSentEvent } from './sse.js';
import { learnTraits, traitsOf, type ModelTraits } from './model-traits.js';

export { traitsOf, type ModelTraits };

export type Role = 'system' | 'user' | 'assistant';
/** What users send. */
export interface ChatMessage {
  role: Role;
  content: string;
}

export interface ToolCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** The provider-neutral transcript (the service stores it; any provider can continue it). */
export type Entry =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

export interface ProviderCall {
  name: 'openai' | 'anthropic' | 'openrouter';
  apiKey: string;
  baseUrl: string;
  model: string;
}

export interface Sampling {
  maxOutputTokens: number;
  temperature?: number;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/** The turn a tool runs in: its id and request id (the service's), and its deadline. */
export interface TurnContext {
  turnId?: string;
  requestId?: string;
  signal?: AbortSignal;
}

/** A tool the model may call: a JSON-schema'd function whose result goes back to it as text. */
export interface Tool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  run(input: Record<string, unknown>, turn: TurnContext): Promise<string>;
}

/**
 * What a model call asks of the budget: its input's estimated tokens, the output it may write, and the least
 * output worth calling for.
 */
export interface TokenAsk {
  input: number;
  maxOutput: number;
  minOutput: number;
}

/**
 * The budget in front of every model call: reserve the input and an output cap (at most `maxOutput`, less when
 * less is left, never under `minOutput`), run the call with that cap, true up to its usage; null: refused (no
 * call made).
 */
export type Gate = <T extends { usage: Usage }>(ask: TokenAsk, call: (outputCap: number) => Promise<T>) => Promise<T | null>;

export interface TurnOutcome {
  text: string;
  /** The provider's last answer in its non-streaming JSON shape (rebuilt from the stream when streamed). */
  raw: unknown;
  /** What this turn added to the transcript: tool rounds (assistant + tool entries), then the answer. */
  entries: Entry[];
  /** All of the turn's model calls together. */
  usage: Usage;
}

const MAX_TOOL_ROUNDS = 4;
const TIMEOUT_MS = 60_000;
/** The least output a call is made for when the day's budget is nearly spent (less would cut most answers). */
export const MIN_OUTPUT_TOKENS = 64;

export class ProviderError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
  }
}

// The tokenizer (gpt-tokenizer's o200k_base, OpenAI's current encoding: no data from the network, ~40 MB and
// under a second to load) is loaded once, at the runtime's first model call: a runtime that starts answers its
// probe at once (loading blocks the event loop while it parses).
let tokenizer: Promise<(text: string) => number> | null = null;
export const loadTokenizer = () => (tokenizer ??= import('gpt-tokenizer/encoding/o200k_base').then((module) => module.countTokens));

/**
 * The input tokens of a call's request body, for the budget's reservation: its JSON (the output cap left out)
 * counted with o200k_base, times the model's margin (`tokenFactor`: 1 for OpenAI's own encodings, more for
 * tokenizers that are not public). Counting the JSON (keys, quotes, escapes) rather than the messages alone
 * covers the providers' per-message framing and the tools' descriptions.
 */
export async function estimateInputTokens(body: Record<string, unknown>, tokenFactor: number): Promise<number> {
  const { max_tokens: _cap, max_completion_tokens: _completionCap, ...rest } = body;
  return Math.ceil((await loadTokenizer())(JSON.stringify(rest)) * tokenFactor);
}

/** One model call's answer. */
interface Round {
  text: string;
  calls: ToolCall[];
  raw: unknown;
  usage: Usage;
}

/** One provider protocol. `collect` rebuilds the non-streaming answer from the stream, so `parse` reads both. */
interface Wire {
  url(provider: ProviderCall): string;
  headers(provider: ProviderCall): Record<string, string>;
  /** `lastRound`: the tools stay described (a transcript with tool calls needs them) but may not be called. */
  body(provider: ProviderCall, traits: ModelTraits, transcript: Entry[], tools: Tool[], sampling: Sampling, stream: boolean, lastRound: boolean): Record<string, unknown>;
  collect(events: AsyncIterable<ServerSentEvent>, onDelta: (text: string) => void): Promise<unknown>;
  parse(raw: any): Round; // eslint-disable-line @typescript-eslint/no-explicit-any
}

// A 2xx answer we cannot use carries 200, as it always has: the provider answered, but not as its API says.
const unusable = (message: string) => new ProviderError(message, 200);
const brokenOff = () => unusable("the model provider's answer broke off before its end");
/** The temperature as the model takes it: none where it refuses one, at most its highest. */
const temperatureOf = (sampling: Sampling, traits: ModelTraits) =>
  sampling.temperature === undefined || !traits.temperature ? {} : { temperature: Math.min(sampling.temperature, traits.maxTemperature) };

const openAiWire: Wire = {
  url: (provider) => `${provider.baseUrl}/chat/completions`,
  headers: (provider) => ({ authorization: `Bearer ${provider.apiKey}`, ...(provider.name === 'openrouter' ? { 'x-title': 'Tollgate agent' } : {}) }),
  body: (provider, traits, transcript, tools, sampling, stream, lastRound) => ({
    model: provider.model,
    messages: transcript.map((entry) => {
      if (entry.role === 'tool') return { role: 'tool', tool_call_id: entry.toolCallId, content: entry.content };
      if (entry.role === 'assistant' && entry.toolCalls?.length) {
        const toolCalls = entry.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.input) } }));
        return { role: 'assistant', content: entry.content, tool_calls: toolCalls };
      }
      return { role: entry.role === 'system' ? traits.systemRole : entry.role, content: entry.content };
    }),
    [traits.outputCap]: sampling.maxOutputTokens,
    ...temperatureOf(sampling, traits),
    ...(tools.length ? { tools: tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })), ...(lastRound ? { tool_choice: 'none' } : {}) } : {}),
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  }),
  async collect(events, onDelta) {
    let id = '';
    let model = '';
    let content = '';
    let finishReason: string | null = null;
    let usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    // Tool calls come in fragments by index: the first names the call, the rest add to its arguments.
    const toolCalls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> = [];
    for await (const { data } of events) {
      if (data === '[DONE]') {
        const message = { role: 'assistant', content: toolCalls.length && !content ? null : content, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) };
        return { id, object: 'chat.completion', model, choices: [{ index: 0, message, finish_reason: finishReason }], usage };
      }
      const chunk = parseJson(data);
      if (chunk.error) throw unusable(`the model provider answered with an error: ${data.slice(0, 300)}`);
      id ||= chunk.id ?? '';
      model ||= chunk.model ?? '';
      if (chunk.usage) usage = { prompt_tokens: chunk.usage.prompt_tokens ?? 0, completion_tokens: chunk.usage.completion_tokens ?? 0, total_tokens: chunk.usage.total_tokens ?? 0 };
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      finishReason = choice.finish_reason ?? finishReason;
      if (typeof choice.delta?.content === 'string' && choice.delta.content) {
        content += choice.delta.content;
        onDelta(choice.delta.content);
      }
      for (const fragment of choice.delta?.tool_calls ?? []) {
        const call = (toolCalls[fragment.index ?? 0] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
        call.id ||= fragment.id ?? '';
        call.function.name ||= fragment.function?.name ?? '';
        call.function.arguments += fragment.function?.arguments ?? '';
      }
    }
    throw brokenOff();
  },
  parse(raw) {
    const message = raw?.choices?.[0]?.message;
    if (!message) throw unusable('the model provider answered without a message');
    const calls: ToolCall[] = (message.tool_calls ?? []).map((call: { id: string; function: { name: string; arguments: string } }) => ({
      id: call.id,
      name: call.function.name,
      input: objectOf(call.function.arguments),
    }));
    if (calls.length === 0 && typeof message.content !== 'string') throw unusable('the model provider answered without text');
    return { text: message.content ?? '', calls, raw, usage: { inputTokens: raw.usage?.prompt_tokens ?? 0, outputTokens: raw.usage?.completion_tokens ?? 0 } };
  },
};

/** Anthropic takes the system prompt apart, tool calls and results as content blocks, and its API version header. */
const anthropicWire: Wire = {
  url: (provider) => `${provider.baseUrl}/messages`,
  headers: (provider) => ({ 'x-api-key': provider.apiKey, 'anthropic-version': '2023-06-01' }),
  body(provider, traits, transcript, tools, sampling, stream, lastRound) {
    const system = transcript.flatMap((entry) => (entry.role === 'system' ? [entry.content] : [])).join('\n\n');
    const messages: Array<{ role: 'user' | 'assistant'; content: unknown }> = [];
    // Tool results answer the assistant message before them, all in one user message.
    let results: unknown[] | null = null;
    for (const entry of transcript) {
      if (entry.role === 'tool') {
        if (!results) messages.push({ role: 'user', content: (results = []) });
        results.push({ type: 'tool_result', tool_use_id: entry.toolCallId, content: entry.content });
        continue;
      }
      results = null;
      if (entry.role === 'system') continue;
      if (entry.role === 'assistant' && entry.toolCalls?.length) {
        const uses = entry.toolCalls.map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: call.input }));
        messages.push({ role: 'assistant', content: [...(entry.content ? [{ type: 'text', text: entry.content }] : []), ...uses] });
      } else messages.push({ role: entry.role, content: entry.content });
    }
    return {
      model: provider.model,
      max_tokens: sampling.maxOutputTokens,
      ...temperatureOf(sampling, traits),
      ...(system ? { system } : {}),
      messages,
      ...(tools.length ? { tools: tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })), ...(lastRound ? { tool_choice: { type: 'none' } } : {}) } : {}),
      ...(stream ? { stream: true } : {}),
    };
  },
  async collect(events, onDelta) {
    let message: { id: string; model: string; stop_reason: string | null; usage: { input_tokens: number; output_tokens: number } } | null = null;
    const blocks: Array<Record<string, any>> = []; // eslint-disable-line @typescript-eslint/no-explicit-any
    const inputJson: string[] = [];
    for await (const { event, data } of events) {
      if (event === 'ping') continue;
      if (event === 'error') throw unusable(`the model provider answered with an error: ${data.slice(0, 300)}`);
      const payload = parseJson(data);
      if (event === 'message_start') {
        const start = payload.message ?? {};
        message = { id: start.id ?? '', model: start.model ?? '', stop_reason: null, usage: { input_tokens: start.usage?.input_tokens ?? 0, output_tokens: start.usage?.output_tokens ?? 0 } };
      } else if (event === 'content_block_start') {
        blocks[payload.index] = { ...payload.content_block };
        inputJson[payload.index] = '';
      } else if (event === 'content_block_delta') {
        const block = blocks[payload.index];
        if (!block) throw unusable('the model provider streamed a delta of a block it never started');
        if (payload.delta?.type === 'text_delta') {
          block.text = (block.text ?? '') + payload.delta.text;
          onDelta(payload.delta.text);
        } else if (payload.delta?.type === 'input_json_delta') inputJson[payload.index] += payload.delta.partial_json;
      } else if (event === 'content_block_stop') {
        const block = blocks[payload.index];
        if (block?.type === 'tool_use' && inputJson[payload.index]) block.input = objectOf(inputJson[payload.index]!);
      } else if (event === 'message_delta') {
        if (!message) throw brokenOff();
        message.stop_reason = payload.delta?.stop_reason ?? message.stop_reason;
        // output_tokens in message_delta is the running total, not an increment.
        message.usage.output_tokens = payload.usage?.output_tokens ?? message.usage.output_tokens;
      } else if (event === 'message_stop') {
        if (!message) throw brokenOff();
        return { id: message.id, type: 'message', role: 'assistant', model: message.model, content: blocks.filter(Boolean), stop_reason: message.stop_reason, usage: message.usage };
      }
    }
    throw brokenOff();
  },
  parse(raw) {
    const content: Array<{ type: string; text?: string; id?: string; name?: string; input?: Record<string, unknown> }> = raw?.content ?? [];
    const text = content.filter((part) => part.type === 'text').map((part) => part.text ?? '').join('');
    const calls = content.filter((part) => part.type === 'tool_use').map((part) => ({ id: part.id!, name: part.name!, input: part.input ?? {} }));
    if (!text && calls.length === 0) throw unusable('the model provider answered without text');
    return { text, calls, raw, usage: { inputTokens: raw.usage?.input_tokens ?? 0, outputTokens: raw.usage?.output_tokens ?? 0 } };
  },
};

/**
 * A conversation turn: the model's answer to `transcript`, running the tools it calls (at most a few rounds,
 * the last one offering none) until it answers in text. Every model call goes through `gate` (the token
 * budget) with an upper bound of its tokens; null from the gate ends the turn with null. With `onDelta`,
 * each call streams and its text reaches `onDelta` as it arrives.
 */
export async function converse(options: {
  provider: ProviderCall;
  transcript: Entry[];
  tools: Tool[];
  sampling: Sampling;
  gate: Gate;
  onDelta?: (text: string) => void;
  /** The turn's deadline: aborts the provider call in flight. */
  signal?: AbortSignal;
  /** The turn the tools run in (the service's ids). */
  turn?: Omit<TurnContext, 'signal'>;
}): Promise<TurnOutcome | null> {
  const { provider, transcript, tools, gate, onDelta, signal } = options;
  const wire = provider.name === 'anthropic' ? anthropicWire : openAiWire;
  const traits = traitsOf(provider.name, provider.model);
  // The output cap as the model takes it (some write less than our most).
  const sampling = { ...options.sampling, maxOutputTokens: Math.min(options.sampling.maxOutputTokens, traits.maxOutputTokens ?? Infinity) };
  const turn: TurnContext = { ...options.turn, signal };
  const entries: Entry[] = [];
  const usage: Usage = { inputTokens: 0, outputTokens: 0 };
  for (let round = 0; ; round += 1) {
    const lastRound = round >= MAX_TOOL_ROUNDS;
    const body = wire.body(provider, traits, [...transcript, ...entries], tools, sampling, Boolean(onDelta), lastRound);
    const ask: TokenAsk = { input: await estimateInputTokens(body, traits.tokenFactor), maxOutput: sampling.maxOutputTokens, minOutput: Math.min(sampling.maxOutputTokens, MIN_OUTPUT_TOKENS) };
    // Near the end of the day the gate may grant a smaller output cap: the call is made with it.
    const answer = await gate(ask, (outputCap) => call(wire, provider, { ...body, [capField(body)]: outputCap }, onDelta, signal));
    if (!answer) return null;
    usage.inputTokens += answer.usage.inputTokens;
    usage.outputTokens += answer.usage.outputTokens;
    // Calls in the last round (where none may be made) are not run: the text is the answer.
    if (answer.calls.length === 0 || lastRound) {
      entries.push({ role: 'assistant', content: answer.text });
      return { text: answer.text, raw: answer.raw, entries, usage };
    }
    const results = await Promise.all(answer.calls.map((toolCall) => runTool(tools, toolCall, turn)));
    entries.push(
      { role: 'assistant', content: answer.text, toolCalls: answer.calls },
      ...answer.calls.map((toolCall, i): Entry => ({ role: 'tool', toolCallId: toolCall.id, name: toolCall.name, content: results[i]! })),
    );
  }
}

/** The field of a request body that caps its output. */
const capField = (body: Record<string, unknown>) => ('max_completion_tokens' in body ? 'max_completion_tokens' : 'max_tokens');

/** A tool's failure is the model's to read, not the turn's end. */
async function runTool(tools: Tool[], toolCall: ToolCall, turn: TurnContext): Promise<string> {
  const tool = tools.find((t) => t.name === toolCall.name);
  if (!tool) return JSON.stringify({ error: `no tool named ${toolCall.name}` });
  try {
    return await tool.run(toolCall.input, turn);
  } catch (error) {
    return JSON.stringify({ error: (error as Error).message });
  }
}

/**
 * One model call, under its own timeout and the turn's deadline (a stream's whole length counts). Only the
 * provider's own words reach the message: our network errors would tell the user our addresses and stack.
 * A 400 that refuses a parameter of ours by name (a model newer than our table: `max_tokens` on a reasoning
 * model, a `temperature` it does not take) is sent again once adapted, and the model's traits remembered.
 */
async function call(wire: Wire, provider: ProviderCall, body: Record<string, unknown>, onDelta: ((text: string) => void) | undefined, signal: AbortSignal | undefined): Promise<Round> {
  const deadline = AbortSignal.any([AbortSignal.timeout(TIMEOUT_MS), ...(signal ? [signal] : [])]);
  const noAnswer = () => new ProviderError(deadline.aborted ? 'the model provider did not answer in time' : 'the model provider did not answer', null);
  for (let adapted = 0; ; adapted += 1) {
    let response: Response;
    try {
      response = await fetch(wire.url(provider), {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...wire.headers(provider) },
        body: JSON.stringify(body),
        signal: deadline,
      });
    } catch {
      throw noAnswer();
    }
    try {
      if (!response.ok) {
        const words = await response.text().catch(() => '');
        const retry = response.status === 400 && adapted < 2 ? adaptToRefusal(provider, body, words) : null;
        if (retry) {
          body = retry;
          continue;
        }
        throw new ProviderError(`the model provider answered ${response.status}: ${words.slice(0, 300)}`, response.status);
      }
      if (onDelta) return wire.parse(await wire.collect(serverSentEvents(response.body ?? emptyBody()), onDelta));
      const text = await response.text();
      let raw: unknown;
      try {
        raw = JSON.parse(text);
      } catch {
        throw new ProviderError('the model provider answered with something that is not JSON', response.status);
      }
      return wire.parse(raw);
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      // Reading the answer failed: the deadline passed, or the connection broke mid-way.
      throw deadline.aborted ? noAnswer() : brokenOff();
    }
  }
}

/**
 * The body adapted to a 400 that names one of its parameters as unsupported (OpenAI's `param`, or the
 * parameter quoted in the message): `max_tokens` becomes `max_completion_tokens`, a refused `temperature` goes.
 * Null: the refusal is about something else.
 */
function adaptToRefusal(provider: ProviderCall, body: Record<string, unknown>, words: string): Record<string, unknown> | null {
  let error: { param?: unknown; code?: unknown; message?: unknown } = {};
  try {
    error = (JSON.parse(words) as { error?: typeof error }).error ?? {};
  } catch {
    return null;
  }
  const message = typeof error.message === 'string' ? error.message : '';
  const names = (parameter: string) => error.param === parameter || message.includes(`'${parameter}'`) || message.includes(`"${parameter}"`);
  if (!/unsupported|not supported|does not support/i.test(`${String(error.code ?? '')} ${message}`)) return null;
  if ('max_tokens' in body && names('max_tokens')) {
    const { max_tokens: cap, ...rest } = body;
    learnTraits(provider.name, provider.model, { outputCap: 'max_completion_tokens' });
    return { ...rest, max_completion_tokens: cap };
  }
  if ('temperature' in body && names('temperature')) {
    const { temperature: _refused, ...rest } = body;
    learnTraits(provider.name, provider.model, { temperature: false });
    return rest;
  }
  return null;
}

async function* emptyBody(): AsyncGenerator<Uint8Array> {}

/** A stream event's JSON; anything else means the stream is not the provider's. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function parseJson(data: string): any {
  try {
    return JSON.parse(data);
  } catch {
    throw unusable('the model provider streamed something that is not JSON');
  }
}

/** Tool arguments as the model wrote them; anything but a JSON object is no arguments. */
function objectOf(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}
