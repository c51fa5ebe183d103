import type { ServerSentEvent } from './sse.js';
import type { ModelTraits } from './model-traits.js';
import type { Entry, ProviderCall, Sampling, Tool, ToolCall, Usage } from './model-types.js';

// What a provider protocol is (Wire: its URL, headers and body, and how its answer is read, streamed or
// not), the error every provider's failure becomes (ProviderError), and the parsing both protocols share.
// The protocols themselves are openai-wire.ts and anthropic-wire.ts; model-call.ts sends a call over one.

export class ProviderError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
  }
}

/** One model call's answer. */
export interface Round {
  text: string;
  calls: ToolCall[];
  raw: unknown;
  usage: Usage;
}

/** One provider protocol. `collect` rebuilds the non-streaming answer from the stream, so `parse` reads both. */
export interface Wire {
  url(provider: ProviderCall): string;
  headers(provider: ProviderCall): Record<string, string>;
  /** `lastRound`: the tools stay described (a transcript with tool calls needs them) but may not be called. */
  body(provider: ProviderCall, traits: ModelTraits, transcript: Entry[], tools: Tool[], sampling: Sampling, stream: boolean, lastRound: boolean): Record<string, unknown>;
  collect(events: AsyncIterable<ServerSentEvent>, onDelta: (text: string) => void): Promise<unknown>;
  parse(raw: any): Round; // eslint-disable-line @typescript-eslint/no-explicit-any
}

// A 2xx answer we cannot use carries 200, as it always has: the provider answered, but not as its API says.
export const unusable = (message: string) => new ProviderError(message, 200);
export const brokenOff = () => unusable("the model provider's answer broke off before its end");
/** The temperature as the model takes it: none where it refuses one, at most its highest. */
export const temperatureOf = (sampling: Sampling, traits: ModelTraits) =>
  sampling.temperature === undefined || !traits.temperature ? {} : { temperature: Math.min(sampling.temperature, traits.maxTemperature) };

/** A stream event's JSON; anything else means the stream is not the provider's. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function parseJson(data: string): any {
  try {
    return JSON.parse(data);
  } catch {
    throw unusable('the model provider streamed something that is not JSON');
  }
}

/** Tool arguments as the model wrote them; anything but a JSON object is no arguments. */
export function objectOf(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}
