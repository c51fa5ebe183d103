import { z } from 'zod';
import { defineSettings, hexKey, optionalString, optionalUrl, trimSlash } from './settings.js';

export interface KeysConfig {
  walletMasterKey: string | null;
  /** A second master key that still opens what it sealed (never seals) during a rotation. */
  walletMasterKeyPrevious: string | null;
  /** Where wallet keys live: sealed in the database under WALLET_MASTER_KEY, or held in AWS KMS (every field set). */
  walletKeys:
    | { provider: 'local' }
    | { provider: 'aws-kms'; region: string; endpoint: string; credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } };
}

/** Where keys are kept: sealed under the master key (platform/master-key.ts), or in AWS KMS (platform/aws-kms.ts). */
export const keysSettings = defineSettings({
  env: {
    WALLET_MASTER_KEY: hexKey,
    WALLET_MASTER_KEY_PREVIOUS: hexKey,
    WALLET_KEY_PROVIDER: z.enum(['local', 'aws-kms']).default('local'),
    AWS_REGION: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'must be an AWS region such as eu-west-1').optional(),
    AWS_KMS_ENDPOINT: optionalUrl,
    AWS_ACCESS_KEY_ID: optionalString,
    AWS_SECRET_ACCESS_KEY: optionalString,
    AWS_SESSION_TOKEN: optionalString,
  },
  load: (e): KeysConfig => ({
    walletMasterKey: e.WALLET_MASTER_KEY ?? null,
    walletMasterKeyPrevious: e.WALLET_MASTER_KEY_PREVIOUS ?? null,
    walletKeys:
      e.WALLET_KEY_PROVIDER === 'aws-kms'
        ? {
            provider: 'aws-kms',
            region: e.AWS_REGION ?? '',
            endpoint: trimSlash(e.AWS_KMS_ENDPOINT) ?? `https://kms.${e.AWS_REGION}.amazonaws.com`,
            credentials: { accessKeyId: e.AWS_ACCESS_KEY_ID ?? '', secretAccessKey: e.AWS_SECRET_ACCESS_KEY ?? '', ...(e.AWS_SESSION_TOKEN ? { sessionToken: e.AWS_SESSION_TOKEN } : {}) },
          }
        : { provider: 'local' },
  }),
  problems: (e) => {
    const problems: string[] = [];
    // A rotation's previous value is a second, different one: the same key twice would rotate nothing.
    const hex = (value: string | undefined) => value?.replace(/^0x/, '').toLowerCase();
    if (e.WALLET_MASTER_KEY_PREVIOUS && hex(e.WALLET_MASTER_KEY_PREVIOUS) === hex(e.WALLET_MASTER_KEY)) {
      problems.push('WALLET_MASTER_KEY_PREVIOUS: the same as WALLET_MASTER_KEY (during a rotation it is the other key)');
    }
    if (e.WALLET_KEY_PROVIDER === 'aws-kms') {
      for (const name of ['AWS_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] as const) {
        if (!e[name]) problems.push(`${name}: required with WALLET_KEY_PROVIDER=aws-kms`);
      }
    }
    return problems;
  },
  devKeys: (e) => (e.WALLET_KEY_PROVIDER === 'local' && !e.WALLET_MASTER_KEY ? ['WALLET_MASTER_KEY'] : []),
});
