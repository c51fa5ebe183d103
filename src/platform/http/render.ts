import { redactText } from '../log-redaction.js';
import { envelopeCodeFor } from './envelope-codes.js';
import type { Family } from './families.js';

/** Success body of the envelope family. */
export const envelope = <T>(data: T, message = 'ok') => ({ code: 0, message, data });

/**
 * The error body of each family; `details` carries validation problems or conflict data. Every error answer
 * is built here (the error handler's, a chat stream's error event), so here its message is redacted: it may
 * quote a library's error, and a chain RPC's quotes the URL whose path or query holds the provider's key
 * (log-redaction.ts; URLs keep their host). Details are not: they carry the caller's own data (an upstream's
 * answer, an intent's fields).
 */
export function errorBody(family: Family, status: number, code: string, unredacted: string, details?: unknown) {
  const message = redactText(unredacted);
  switch (family) {
    case 'envelope':
      return { code: envelopeCodeFor(status), message, data: details ?? null };
    case 'intent':
      return details === undefined ? { code, message } : { code, message, details };
    case 'direct':
      return { error: details === undefined ? { code, message } : { code, message, details } };
    case 'relay':
      return {
        success: false,
        accepted: false,
        error: details === undefined ? { code, message } : { code, message, details },
      };
  }
}
