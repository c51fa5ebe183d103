// The provider-neutral vocabulary of a model call: the transcript (Entry[]), the provider and sampling of a
// call, tools and the turn they run in, usage and the budget's gate. Its own file because every part speaks
// it (the turn loop in models.ts, the providers' wires, the budget, the pay tool, the runtime's main), and
// none of them should have to load another's code to name a type.

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
