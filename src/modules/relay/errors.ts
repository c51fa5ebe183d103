import { ApiError } from '../../platform/http/errors.js';

// The spec's payment relay errors table (the relay family renders { success: false, accepted: false,
// error: { code, message } }), plus the answers for outcomes the table does not name: a broadcast whose
// result is not known yet, one still in flight, and a facilitator that cannot be reached.
const RETRY_AFTER = { 'retry-after': '5' };

export const relayErrors = {
  rejected: (status: number, code: string, message: string) => new ApiError(status, code, message),
  invalidIdempotencyKey: () => new ApiError(400, 'invalid_idempotency_key', 'Idempotency-Key is required: 8 to 200 printable ASCII characters'),
  idempotencyConflict: () => new ApiError(409, 'idempotency_conflict', 'This Idempotency-Key was used with a different credential or request'),
  capacityExceeded: () => new ApiError(503, 'idempotency_capacity_exceeded', 'The relay holds as many idempotency records as it can keep; retry later', undefined, RETRY_AFTER),
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
