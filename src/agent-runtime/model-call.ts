import { deadlineSignal } from './deadline.js';
import { learnTraits } from './model-traits.js';
import type { ProviderCall } from './model-types.js';
import { serverSentEvents } from './sse.js';
import { brokenOff, ProviderError, type Round, type Wire } from './wire.js';

// One model call over HTTP: its timeout and the turn's deadline, the provider's refusal in its own words,
// and the one retry after a 400 that names a parameter of ours as unsupported (whose lesson is kept in the
// model's traits). The turn loop (models.ts) makes its calls through here.

const TIMEOUT_MS = 60_000;

/**
 * One model call, under its own timeout and the turn's deadline (a stream's whole length counts). Only the
 * provider's own words reach the message: our network errors would tell the user our addresses and stack.
 * A 400 that refuses a parameter of ours by name (a model newer than our table: `max_tokens` on a reasoning
 * model, a `temperature` it does not take) is sent again once adapted, and the model's traits remembered.
 */
export async function call(wire: Wire, provider: ProviderCall, body: Record<string, unknown>, onDelta: ((text: string) => void) | undefined, signal: AbortSignal | undefined): Promise<Round> {
  const deadline = deadlineSignal(TIMEOUT_MS, signal);
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
