// A queue consumer over the typed client: one request per event. Each ack (or nack) also claims the next event
// (`next`, the ack-and-next extension, docs/events.md), so the loop claims on its own only to start and after a wait
// that found nothing or a lease that was lost.
import type { Client } from 'openapi-fetch';
import type { paths } from './api.js';

type Claimed = NonNullable<paths['/v1/events/{eventId}/ack']['post']['responses'][200]['content']['application/json']['data']['next']>;

/** An event as the handler gets it (the claim's `event`). */
export type QueueEvent = Claimed['event'];

export interface ConsumeOptions {
  /** Lease of each claimed event, seconds (default: the queue's `defaultLeaseSeconds`). */
  leaseSeconds?: number;
  /** How long each claim waits for an event when the queue is empty, seconds 0–30 (default 20). */
  waitSeconds?: number;
  /** Stops the loop: the event in hand is finished (acked or nacked, without claiming another) first. */
  signal?: AbortSignal;
  /** Delay before a nacked event is retried, seconds (default: the queue's backoff). */
  retryDelaySeconds?: number;
}

export interface ConsumeResult {
  acked: number;
  nacked: number;
  /** Events whose lease ran out before their ack or nack (409 `lease_expired`, `lease_token_mismatch`): delivered again. */
  lost: number;
}

/** A call the consumer cannot go on from (401, 404, a 5xx): its status and the error body. */
export class ConsumeError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`event consumer stopped: HTTP ${status}${body && typeof body === 'object' && 'message' in body ? `: ${String(body.message)}` : ''}`);
  }
}

/**
 * Claims events of `queueId` and hands each to `handle`: acked when it returns, nacked with its error when it throws.
 * Runs until `options.signal` aborts (then resolves with the counts) or a call fails (then rejects with ConsumeError).
 */
export async function consumeQueue(client: Client<paths>, queueId: string, handle: (event: QueueEvent) => unknown, options: ConsumeOptions = {}): Promise<ConsumeResult> {
  const { signal, leaseSeconds, retryDelaySeconds } = options;
  const waitSeconds = options.waitSeconds ?? 20;
  const counts: ConsumeResult = { acked: 0, nacked: 0, lost: 0 };
  const next = () => (signal?.aborted ? undefined : { queueId, waitSeconds, ...(leaseSeconds === undefined ? {} : { leaseSeconds }) });
  // An abort ends a waiting claim at once; the server undoes a claim it was making for the closed request.
  const stopped = <T>(call: Promise<T>) => call.catch((error: unknown) => (signal?.aborted ? undefined : Promise.reject(error)));

  let claimed: Claimed | null = null;
  while (!signal?.aborted) {
    if (!claimed) {
      const answer = await stopped(client.POST('/v1/event-queues/{queueId}/claim', { params: { path: { queueId } }, body: { waitSeconds, ...(leaseSeconds === undefined ? {} : { leaseSeconds }) }, signal }));
      if (!answer) break;
      if (answer.error) throw new ConsumeError(answer.response.status, answer.error);
      claimed = answer.data.data as Claimed | null;
      continue;
    }
    const { event, leaseToken } = claimed;
    let failure: unknown = undefined;
    let failed = false;
    try {
      await handle(event);
    } catch (error) {
      [failure, failed] = [error, true];
    }
    // Not aborted by the signal: the event in hand is always settled, and the next one claimed only if still running.
    const answer = failed
      ? await client.POST('/v1/events/{eventId}/nack', {
          params: { path: { eventId: event.id } },
          body: { leaseToken, error: errorText(failure), next: next(), ...(retryDelaySeconds === undefined ? {} : { retryDelaySeconds }) },
        })
      : await client.POST('/v1/events/{eventId}/ack', { params: { path: { eventId: event.id } }, body: { leaseToken, next: next() } });
    if (answer.error) {
      if (answer.response.status !== 409) throw new ConsumeError(answer.response.status, answer.error);
      counts.lost++;
      claimed = null;
      continue;
    }
    counts[failed ? 'nacked' : 'acked']++;
    claimed = (answer.data.data.next ?? null) as Claimed | null;
  }
  return counts;
}

/** A nack's `error` (at most 2,000 characters). */
function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : String(error);
  return (text || 'handler failed').slice(0, 2000);
}
