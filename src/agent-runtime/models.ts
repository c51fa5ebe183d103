// A conversation turn with a model: the turn loop (tool rounds, the budget's gate around every call) and the
// token estimate the gate reserves by. The three model providers are spoken over their real HTTP APIs:
// OpenAI chat completions, Anthropic messages, and OpenRouter (OpenAI's shape at its own base URL), with tool
// use and streaming in each one's own format (openai-wire.ts, anthropic-wire.ts; model-call.ts sends one call).
// The conversation is kept provider-neutral (Entry[], model-types.ts) and converted for each call, so any
// provider can continue a conversation another one started. Base URLs come with each call, so operators (and
// tests) can point them anywhere.
import { anthropicWire } from './anthropic-wire.js';
import { call } from './model-call.js';
import { traitsOf } from './model-traits.js';
import type { Entry, Gate, Sampling, TokenAsk, Tool, ToolCall, TurnContext, TurnOutcome, ProviderCall, Usage } from './model-types.js';
import { openAiWire } from './openai-wire.js';


const MAX_TOOL_ROUNDS = 4;
/** The least output a call is made for when the day's budget is nearly spent (less would cut most answers). */
export const MIN_OUTPUT_TOKENS = 64;

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
