/**
 * The one error type routes and services throw. `code` is a stable snake_case name; each response
 * family renders it in its own shape (the envelope maps it to a number, see envelope-codes.ts).
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    /** Response headers that go with the error (Retry-After, ...). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string, details?: unknown, code = 'invalid_request') =>
  new ApiError(400, code, message, details);
export const unauthorized = (message = 'Missing or invalid credentials') => new ApiError(401, 'unauthorized', message);
export const forbidden = (message: string, code = 'forbidden') => new ApiError(403, code, message);
export const notFound = (message = 'Not found', code = 'not_found') => new ApiError(404, code, message);
export const conflict = (message: string, code = 'conflict', details?: unknown) =>
  new ApiError(409, code, message, details);
export const tooManyRequests = (retryAfterSeconds: number, code = 'rate_limited') =>
  new ApiError(429, code, 'Too many requests', undefined, { 'retry-after': String(retryAfterSeconds) });
