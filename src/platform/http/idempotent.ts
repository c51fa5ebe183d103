// The one way a route honours Idempotency-Key (platform/idempotency.ts): its work returns the answer
// (status and body) instead of sending it, and this sends it, or the stored answer of an earlier call with
// the same key. The key is scoped to the principal the route's guard authenticated.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../auth/principal.js';
import { ApiError } from './errors.js';
import { checkedIdempotencyKey, type Answer, type Attempt, type Idempotency } from '../idempotency.js';

export const IDEMPOTENCY_KEY = 'idempotency-key';

/**
 * 400 `idempotency_key_required` unless the request names an Idempotency-Key: for calls whose lost answer could only
 * be repeated by moving money (or spending gas) again. `why`: what the call moves, said in the message.
 */
export function requireIdempotencyKey(request: FastifyRequest, why: string): void {
  if (request.headers[IDEMPOTENCY_KEY] !== undefined) return;
  // `details.reason` repeats the code: envelope-family answers carry a numeric code.
  throw new ApiError(400, 'idempotency_key_required', `An Idempotency-Key header (8 to 200 printable ASCII characters) is required: ${why}`, { reason: 'idempotency_key_required' });
}

/** Whose keys these are: a wallet's credentials share them, so do a project's keys and a user's tokens. */
export function idempotencyScope(principal: Principal | null): string {
  switch (principal?.kind) {
    case 'wallet':
      return `wallet:${principal.walletId}`;
    case 'identity':
      return `user:${principal.userId}`;
    case 'project_key':
      return `project:${principal.projectId}`;
    case 'mgmt':
      return `mgmt:${principal.credentialId}`;
    default:
      throw new Error('an idempotent route needs an authenticated principal: is its guard missing?');
  }
}

/**
 * Sends `work`'s answer; with an Idempotency-Key, once per key and request (a repeat gets the first answer,
 * marked `Idempotent-Replayed: true`). Without one, `work` runs with no attempt, as any call.
 */
export async function sendIdempotent(
  idempotency: Idempotency,
  request: FastifyRequest,
  reply: FastifyReply,
  operation: string,
  work: (attempt: Attempt | null) => Promise<Answer>,
): Promise<FastifyReply> {
  const key = checkedIdempotencyKey(request.headers[IDEMPOTENCY_KEY]);
  if (key === null) return send(reply, { ...(await work(null)), replayed: false });
  const answer = await idempotency.run(
    { scope: idempotencyScope(request.principal), key, operation, request: { params: request.params ?? null, query: request.query ?? null, body: request.body ?? null } },
    work,
  );
  return send(reply, answer);
}

function send(reply: FastifyReply, answer: Answer & { replayed: boolean }): FastifyReply {
  if (answer.replayed) reply.header('idempotent-replayed', 'true');
  if (answer.headers) reply.headers(answer.headers);
  return reply.code(answer.status).send(answer.body);
}
