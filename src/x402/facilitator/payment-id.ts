// The x402 `payment-identifier` extension on the facilitator side: the id a settle carries (16–128
// characters of [A-Za-z0-9_-], `info.required` boolean). Read by hand on purpose: the extension
// package's validator compiles the JSON Schema that arrives inside the payload with Ajv, so anyone
// could send a catastrophic regex `pattern` and stall the event loop with one unauthenticated settle.
import type { PaymentPayload } from '@x402/core/types';
import { isValidPaymentId, PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier';

export { PAYMENT_IDENTIFIER };

export type PaymentIdOf = { ok: true; id: string | null } | { ok: false; message: string };

export function paymentIdOf(payload: PaymentPayload): PaymentIdOf {
  const extension = payload.extensions?.[PAYMENT_IDENTIFIER];
  if (extension === undefined || extension === null) return { ok: true, id: null };
  const info = typeof extension === 'object' ? (extension as { info?: unknown }).info : undefined;
  if (!info || typeof info !== 'object') return { ok: false, message: 'payment-identifier: info must be an object' };
  const { id, required } = info as { id?: unknown; required?: unknown };
  if (required !== undefined && typeof required !== 'boolean') return { ok: false, message: 'payment-identifier: info.required must be a boolean' };
  if (id === undefined) return { ok: true, id: null };
  if (typeof id !== 'string' || !isValidPaymentId(id)) return { ok: false, message: 'payment-identifier: id must be 16-128 characters of A-Z, a-z, 0-9, _ and -' };
  return { ok: true, id };
}
