import { z } from 'zod';
import { defineSettings } from './settings.js';

export interface SecretsConfig {
  secretPepper: string | null;
  /** A second pepper accepted (never written) during a rotation (docs/operations.md#key-rotation). */
  secretPepperPrevious: string | null;
}

/** The server pepper of every secret's keyed hash (platform/secrets.ts), and the previous one during a rotation. */
export const secretsSettings = defineSettings({
  env: {
    SECRET_PEPPER: z.string().min(32, 'must be at least 32 characters').optional(),
    SECRET_PEPPER_PREVIOUS: z.string().min(32, 'must be at least 32 characters').optional(),
  },
  load: (e): SecretsConfig => ({ secretPepper: e.SECRET_PEPPER ?? null, secretPepperPrevious: e.SECRET_PEPPER_PREVIOUS ?? null }),
  // A rotation's previous value is a second, different one: the same value twice would rotate nothing.
  problems: (e) =>
    e.SECRET_PEPPER_PREVIOUS && e.SECRET_PEPPER_PREVIOUS === e.SECRET_PEPPER ? ['SECRET_PEPPER_PREVIOUS: the same as SECRET_PEPPER (during a rotation it is the other pepper)'] : [],
  devKeys: (e) => (e.SECRET_PEPPER ? [] : ['SECRET_PEPPER']),
});
