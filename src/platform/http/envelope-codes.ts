/**
 * Numeric codes of the `{ code, message, data }` envelope. 0 is success; 1001 (unauthorized) is
 * fixed by the spec; the rest is ours, one per HTTP meaning, so clients can switch on either.
 * A module-specific condition keeps its HTTP status's code and says more in `message`.
 */
export const ENVELOPE_CODES: Record<number, number> = {
  400: 1000, // validation_failed: details in data
  401: 1001, // unauthorized
  402: 1002, // payment_required
  403: 1003, // forbidden
  404: 1004, // not_found
  409: 1005, // conflict
  410: 1006, // gone
  413: 1007, // payload_too_large
  414: 1014, // uri_too_long (a path parameter longer than any id)
  415: 1008, // unsupported_media_type
  429: 1009, // rate_limited
  500: 1010, // internal_error
  502: 1011, // upstream_failed
  503: 1012, // unavailable
  504: 1013, // upstream_timeout
};

export const envelopeCodeFor = (status: number): number =>
  ENVELOPE_CODES[status] ?? (status >= 500 ? ENVELOPE_CODES[500] : ENVELOPE_CODES[400]);
