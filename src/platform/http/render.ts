import { envelopeCodeFor } from './envelope-codes.js';
import type { Family } from './families.js';

/** Success body of the envelope family. */
export const envelope = <T>(data: T, message = 'ok') => ({ code: 0, message, data });

/** The error body of each family; `details` carries validation problems or conflict data. */
export function errorBody(family: Family, status: number, code: string, message: string, details?: unknown) {
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
