import { ApiError } from '../../platform/http/errors.js';

// Errors of the Events area. The envelope carries the HTTP status's numeric code; `data.reason`
// carries the specific snake_case reason, so clients can tell, e.g., an expired lease from a lost one.

const withReason = (status: number, reason: string, message: string, extra: Record<string, unknown> = {}) =>
  new ApiError(status, reason, message, { reason, ...extra });

export const queueNotFound = () => withReason(404, 'queue_not_found', 'Event queue not found');
export const eventNotFound = () => withReason(404, 'event_not_found', 'Event not found');
export const scheduleNotFound = () => withReason(404, 'schedule_not_found', 'Schedule not found');

export const queueNameTaken = (queueId: string) =>
  withReason(409, 'queue_name_taken', 'An event queue with this name already exists in the project', { queueId });

export const leaseExpired = (expiredAt: Date | null) =>
  withReason(409, 'lease_expired', 'The lease has expired; the event will be (or was) delivered again', {
    leaseExpiredAt: expiredAt?.toISOString() ?? null,
  });
export const leaseTokenMismatch = () =>
  withReason(409, 'lease_token_mismatch', 'The lease token is not the current lease of this event (it was claimed again)');
export const leaseReleased = (status: string) =>
  withReason(409, 'lease_released', `The lease already ended by ack or nack; the event is ${status}`, { status });

export const payloadTooLarge = (limit: number) =>
  withReason(413, 'payload_too_large', `payload must serialize to at most ${limit} bytes of JSON`, { limitBytes: limit });

export const invalidSchedule = (field: string, message: string) =>
  new ApiError(400, 'invalid_schedule', 'Request validation failed', [{ in: 'body', path: `/schedule/${field}`, message }]);
