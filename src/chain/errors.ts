import { BaseError, HttpRequestError, TimeoutError } from 'viem';

/**
 * True when an RPC call failed without an answer from the node (connection refused, timeout, HTTP
 * 5xx): the chain is unreachable, which is not the same as the node rejecting or reverting a call.
 */
export function isTransportError(error: unknown): boolean {
  if (error instanceof BaseError) {
    return error.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError) !== null;
  }
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error.cause as NodeJS.ErrnoException | undefined)?.code;
    return error.name === 'AbortError' || error.name === 'TimeoutError' || code === 'ECONNREFUSED' || code === 'ECONNRESET'
      || (error instanceof TypeError && /fetch failed/i.test(error.message));
  }
  return false;
}

/** The chain did not answer; callers answer 503 instead of guessing an outcome. */
export class ChainUnavailableError extends Error {
  constructor(cause?: unknown) {
    super(`chain RPC unavailable${cause instanceof Error ? `: ${cause.message.split('\n')[0]}` : ''}`, { cause });
    this.name = 'ChainUnavailableError';
  }
}
