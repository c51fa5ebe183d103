import { ApiError } from '../../platform/http/errors.js';

// The spec's image-storage errors table, one factory per condition. Storage answers in the envelope
// family ({ code: number, message, data }); the numeric code says the HTTP meaning, and `data.reason`
// names the condition, so a client can tell a changed file from a pending payment (both 409).
const fail = (status: number, reason: string, message: string, extra?: Record<string, unknown>, headers?: Record<string, string>) =>
  new ApiError(status, reason, message, { reason, ...extra }, headers);

export const storageErrors = {
  invalidKey: () => fail(400, 'invalid_idempotency_key', 'Idempotency-Key must be a UUID (send a new random one per image, and keep it)'),
  invalidFile: (message: string) => fail(400, 'invalid_file_field', message),
  invalidPayment: (message: string) => fail(400, 'invalid_payment', message),
  orderNotFound: () => fail(404, 'order_not_found', 'No upload order for this key'),
  changedFile: () => fail(409, 'changed_file', 'This Idempotency-Key belongs to another image: send the original image, or a new key for a new image'),
  /** `transactionHash`, when the facilitator named one, is what reconcile needs. */
  paymentPending: (transactionHash?: string | null) =>
    fail(
      409,
      'payment_pending',
      'A payment of this order awaits confirmation: do not sign again; read the order or reconcile it with the transaction hash',
      transactionHash ? { transactionHash } : undefined,
    ),
  authorizationUsed: () => fail(409, 'payment_authorization_already_used', 'This payment authorization already funds another order; sign a new one for this order'),
  transactionUsed: () => fail(409, 'payment_already_used', 'This payment’s transfer already paid for something else'),
  notConfirmable: (message: string) => fail(409, 'payment_not_confirmed', message),
  nothingToReconcile: (status: string) => fail(409, 'no_pending_payment', `The order is ${status}: there is no pending payment to confirm`),
  quoteExpired: (quoteExpiresAt: Date) =>
    fail(410, 'quote_expired', 'The unpaid quote of this order has expired: confirm it was not paid, then upload with a new key', { quoteExpiresAt: quoteExpiresAt.toISOString() }),
  retentionEnded: () => fail(410, 'order_expired', 'The storage period of this order has ended'),
  tooLarge: (message: string) => fail(413, 'payload_too_large', message),
  unsupportedImage: (reason: string, message: string) => fail(415, reason, message),
  storageFailed: (paymentResponse?: string) =>
    fail(
      502,
      'storage_failed',
      'Storing the image failed; the order is paid: repeat the upload with the same key and image (it is not charged again)',
      undefined,
      paymentResponse ? { 'payment-response': paymentResponse, 'x-payment-response': paymentResponse } : undefined,
    ),
  unavailable: (message = 'The upload service is temporarily unavailable; check GET /v1/ipfs/config and retry') =>
    fail(503, 'upload_unavailable', message, undefined, { 'retry-after': '5' }),
};
