// The events kinds of the load: publishes with a deduplication key (a retry after a lost answer sends the
// same key), and consumers that claim from the three queues (published events, the schedules' ticks, the
// project's intent events) and ack each delivery. Every ack the service accepted is recorded with the
// lease token it came with: one event acked under two different leases would be an event handed to two
// consumers at once, i.e. "acked twice".
import { counts, countOp, giveUp, inFlight, request, sleep } from './client.js';
import type { Fixtures } from './fixtures.js';
import type { LoadContext } from './load-payments.js';

export interface EventsTold {
  /** deduplicationKey → the event id the publish answered. */
  published: Map<string, string>;
  /** event id → the lease tokens whose ack was accepted. */
  acks: Map<string, Set<string>>;
  deliveries: number;
}

export const newEventsTold = (): EventsTold => ({ published: new Map(), acks: new Map(), deliveries: 0 });

export async function publishes(ctx: LoadContext, told: EventsTold, n: number): Promise<void> {
  const { fx } = ctx;
  await inFlight(2, Array.from({ length: n }, (_, i) => `published-${i}`), ctx.spanMs, async (key, i) => {
    countOp('publish');
    let last = 'no attempt';
    while (Date.now() < ctx.deadline) {
      const answer = await request(`${fx.lb}/v1/event-queues/${fx.queues.published}/events`, {
        headers: { authorization: `Bearer ${fx.apiKey}` },
        json: { payload: { n: i }, deduplicationKey: key },
      });
      if (answer.status === 200 || answer.status === 201) {
        told.published.set(key, answer.body.data.id);
        return;
      }
      last = `${answer.status ?? 'lost'} ${JSON.stringify(answer.body)?.slice(0, 200)}`;
      counts.retries += 1;
      await sleep(300);
    }
    giveUp('publish', last);
  });
}

export interface Consumers {
  stop(): Promise<void>;
}

/** `n` consumers claiming in turn from each queue, acking every delivery (batch ack), until stopped. */
export function startConsumers(fx: Fixtures, told: EventsTold, n: number): Consumers {
  let stopping = false;
  const headers = { authorization: `Bearer ${fx.apiKey}` };
  const queues = [fx.queues.published, fx.queues.scheduled, fx.queues.intents];
  const consumer = async (offset: number) => {
    for (let turn = offset; !stopping; turn++) {
      const queueId = queues[turn % queues.length]!;
      const claimed = await request(`${fx.lb}/v1/event-queues/${queueId}/claim`, { headers, json: { maxEvents: 10, waitSeconds: 1, leaseSeconds: 10 } });
      if (claimed.status !== 200) {
        await sleep(300);
        continue;
      }
      const leases = (claimed.body.data as Array<{ event: { id: string }; leaseToken: string }>).map((c) => ({ eventId: c.event.id, leaseToken: c.leaseToken }));
      if (leases.length === 0) continue;
      countOp('claim', leases.length);
      told.deliveries += leases.length;
      // The ack, retried with the same tokens after a lost answer (a repeated ack of one lease answers ok).
      for (let attempt = 1; attempt <= 10; attempt++) {
        const acked = await request(`${fx.lb}/v1/events/ack`, { headers, json: { leases } });
        if (acked.status === 200) {
          for (const [i, result] of (acked.body.data as Array<{ eventId: string; ok: boolean }>).entries()) {
            if (!result.ok) continue; // the lease ran out meanwhile: the event comes again
            const tokens = told.acks.get(result.eventId) ?? new Set<string>();
            tokens.add(leases[i]!.leaseToken);
            told.acks.set(result.eventId, tokens);
          }
          countOp('ack', leases.length);
          break;
        }
        counts.retries += 1;
        await sleep(300);
      }
    }
  };
  const running = Array.from({ length: n }, (_, i) => consumer(i));
  return {
    async stop() {
      stopping = true;
      await Promise.all(running);
    },
  };
}
