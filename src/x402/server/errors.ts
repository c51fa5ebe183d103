// How a paid endpoint learns what went wrong outside the payment itself. Each maps to one answer:
// malformed header -> 400, facilitator unreachable -> 503 (nothing happened, the client may retry),
// outcome unknown -> 503 `settlement_result_unknown` (money may have moved; do not charge again).

/** PAYMENT-SIGNATURE / X-PAYMENT is not a decodable x402 v2 payment payload. */
export class PaymentHeaderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PaymentHeaderError';
  }
}

/** The facilitator could not be reached or answered 5xx before doing anything. */
export class FacilitatorUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'FacilitatorUnavailableError';
  }
}

/** A settle may have been broadcast but we have no answer (timeout, lost response, still pending). */
export class SettlementUnknownError extends Error {
  constructor(
    message: string,
    /** The transaction hash when the facilitator reported one. */
    readonly transaction: string = '',
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SettlementUnknownError';
  }
}
