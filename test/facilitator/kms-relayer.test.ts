// Relayer keys held in AWS KMS (FACILITATOR_KMS_KEY_IDS, with the wallets' KMS settings): the facilitator
// settles with transactions KMS signed, and the key never exists here. KMS is the stand-in that speaks its
// JSON API and checks each request's Signature Version 4.
import { getAddress } from 'viem';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { AwsKms } from '../../src/platform/aws-kms.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { startKmsStandIn } from '../wallets/kms-stand-in.js';
import { fundedPayer, signAuthorization } from '../x402/support.js';
import { requirementsFor, settle } from './support.js';

const REGION = 'eu-west-1';
let kms: Awaited<ReturnType<typeof startKmsStandIn>>;
let app: TestApp;
let relayerKeyId: string;

beforeAll(async () => {
  kms = await startKmsStandIn('AKIATESTKEY', 'test-secret-key', REGION);
  const settings = { region: REGION, endpoint: kms.url, credentials: { accessKeyId: 'AKIATESTKEY', secretAccessKey: 'test-secret-key' } };
  relayerKeyId = await new AwsKms(settings).createKey('Tollgate relayer', [{ TagKey: 'tollgate-relayer', TagValue: '1' }]);
  app = await buildTestApp({
    env: {
      WALLET_KEY_PROVIDER: 'aws-kms',
      AWS_REGION: REGION,
      AWS_KMS_ENDPOINT: kms.url,
      AWS_ACCESS_KEY_ID: 'AKIATESTKEY',
      AWS_SECRET_ACCESS_KEY: 'test-secret-key',
      FACILITATOR_KMS_KEY_IDS: relayerKeyId,
    },
  });
});
afterAll(async () => {
  await app?.close();
  await kms?.close();
});

it('settles with a relayer key held in KMS: the transaction is sent from its address, signed by KMS', async () => {
  const { privateKeyToAccount } = await import('viem/accounts');
  const relayer = privateKeyToAccount(kms.keys.get(relayerKeyId)!).address;
  expect(app.ctx.chain.relayers.map((r) => r.address)).toEqual([relayer]);
  const payer = await fundedPayer(app, '1');
  const requirements = requirementsFor(app);
  const signsBefore = kms.calls.filter((c) => c.target === 'TrentService.Sign').length;

  const answer = await settle(app, await signAuthorization(payer, requirements), requirements);

  expect(answer.body).toMatchObject({ success: true });
  const transaction = await app.ctx.chain.publicClient.getTransaction({ hash: answer.body.transaction as `0x${string}` });
  expect(getAddress(transaction.from)).toBe(relayer);
  expect(kms.calls.filter((c) => c.target === 'TrentService.Sign').length).toBeGreaterThan(signsBefore);
});

it('needs the wallets KMS settings, and is one source of relayer keys', () => {
  expect(() => loadConfig({ FACILITATOR_KMS_KEY_IDS: 'key-1' })).toThrow(/WALLET_KEY_PROVIDER=aws-kms/);
  const kmsEnv = { WALLET_KEY_PROVIDER: 'aws-kms', AWS_REGION: REGION, AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b', FACILITATOR_KMS_KEY_IDS: 'key-1' };
  expect(() => loadConfig({ ...kmsEnv, FACILITATOR_PRIVATE_KEY: `0x${'11'.repeat(32)}` })).toThrow(/not both/);
  expect(loadConfig(kmsEnv).facilitatorKmsKeyIds).toEqual(['key-1']);
});
