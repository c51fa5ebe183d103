import { ApiError, tooManyRequests } from '../../platform/http/errors.js';

// The spec's payment relay errors table (the relay family renders { success: false, accepted: false,
// error: { code, message } }), plus the answers for outcomes the table does not name: a broadcast whose
// result is not known yet, one still in flight, a facilitator that cannot be reached, and a client past its
// rate limit (429 rate_limited).
const RETRY_AFTER = { 'retry-after': '5' };

export const relayErrors = {
  rejected: (status: number, code: string, message: string) => new ApiError(status, code, message),
  invalidIdempotencyKey: () => new ApiError(400, 'invalid_idempotency_key', 'Idempotency-Key is required: 8 to 200 printable ASCII characters'),
  idempotencyConflict: () => new ApiError(409, 'idempotency_conflict', 'This Idempotency-Key was used with a different credential or request'),
  /** `retryAfterSeconds`: until the payer's oldest record expires and frees a place. */
  capacityExceeded: (retryAfterSeconds: number) =>
    new ApiError(503, 'idempotency_capacity_exceeded', 'This payer holds as many idempotency records as the relay keeps for one payer; retry a new key later', undefined, { 'retry-after': String(retryAfterSeconds) }),
  /** Per client address, before the body is read (module.ts). */
  rateLimited: (retryAfterSeconds: number) => tooManyRequests(retryAfterSeconds),
  gasLow: (message: string) => new ApiError(503, 'relayer_gas_low', `${message}: the relay resumes once the relayer is funded`, undefined, { 'retry-after': '60' }),
  unavailable: () => new ApiError(503, 'relay_unavailable', 'Verification or settlement is temporarily unavailable; nothing was submitted. Retry.', undefined, RETRY_AFTER),
  outcomeUnknown: () =>
    new ApiError(
      503,
      'broadcast_outcome_unknown',
      'The settlement was submitted but its outcome is not known yet. Retry the same credential with the same Idempotency-Key: the retry resolves it from the chain. Do not sign a new credential.',
      undefined,
      RETRY_AFTER,
    ),
  inProgress: () =>
    new ApiError(503, 'broadcast_in_progress', 'A broadcast with this Idempotency-Key is still in flight; retry the same request shortly', undefined, RETRY_AFTER),
};
