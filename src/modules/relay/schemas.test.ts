import { Challenge } from 'mppx';
import { Types } from 'mppx/evm';
import { privateKeyToAccount } from 'viem/accounts';
import { beforeAll, describe, expect, it } from 'vitest';
import { mppxCredential, USDG_4663, type MppxCredentialResult } from '../../../test/relay/mppx-client.js';
import { AuthorizationPayloadSchema, ChallengeSchema, ChargeRequestSchema } from './schemas.js';

type Schema = { safeParse: (value: unknown) => { success: boolean; data?: unknown; error?: { issues: unknown[] } } };
const answer = (schema: Schema, value: unknown) => {
  const result = schema.safeParse(value);
  return result.success ? { data: result.data } : { issues: result.error!.issues };
};

let paid: MppxCredentialResult;
beforeAll(async () => {
  const account = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');
  paid = await mppxCredential({ account, amount: '10000', recipient: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC', asset: USDG_4663, description: 'd', externalId: 'e' });
});

describe('the compiled schemas answer what mppx’s do (data, or the same issues)', () => {
  it('Challenge', () => {
    const c = paid.credential.challenge as unknown as Record<string, unknown>;
    const values: unknown[] = [
      c,
      { ...c, extra: 'stripped' },
      { ...c, opaque: 'b3JkZXI', meta: { order: '7' }, digest: 'sha-256=abc', header: 'Payment-Authorization' },
      { ...c, id: '' },
      { ...c, id: 42 },
      { ...c, expires: 'tomorrow' },
      { ...c, digest: 'md5=abc' },
      { ...c, header: 'bad header' },
      { ...c, meta: { n: 1 } },
      { ...c, request: [] },
      { ...c, request: 'eyJ9' },
      { ...c, realm: undefined, method: undefined },
      [],
      null,
      'challenge',
    ];
    for (const value of values) expect(answer(ChallengeSchema, value), JSON.stringify(value)).toEqual(answer(Challenge.Schema, value));
  });

  it('ChargeRequest', () => {
    const r = paid.request;
    const md = r.methodDetails as Record<string, unknown>;
    const values: unknown[] = [
      r,
      { ...r, extra: 'stripped', methodDetails: { ...md, extra: 'stripped' } },
      { ...r, methodDetails: { ...md, permit2Address: '0x000000000022D473030F116dDEE9F6B43aC78BA3', splits: [{ amount: '1', recipient: r.recipient }] } },
      { ...r, methodDetails: { ...md, splits: [{ amount: '1.5', recipient: 'x' }] } },
      { ...r, methodDetails: { ...md, credentialTypes: [] } },
      { ...r, methodDetails: { ...md, credentialTypes: ['voucher'] } },
      { ...r, methodDetails: { ...md, chainId: '4663' } },
      { ...r, methodDetails: { ...md, decimals: undefined } },
      { ...r, methodDetails: undefined },
      { ...r, methodDetails: [] },
      { ...r, amount: '0.01' },
      { ...r, amount: 10000 },
      { ...r, currency: 'USDG', recipient: '0x1234' },
      { ...r, description: 5, externalId: null },
      {},
      [],
      'eyJhbW91bnQiOiIxMDAwMCJ9',
    ];
    for (const value of values) expect(answer(ChargeRequestSchema, value), JSON.stringify(value)).toEqual(answer(Types.ChargeRequestSchema, value));
  });

  it('AuthorizationPayload', () => {
    const p = paid.credential.payload as Record<string, unknown>;
    const values: unknown[] = [
      p,
      { ...p, extra: 'stripped' },
      { ...p, type: undefined },
      { ...p, type: 'permit2' },
      { ...p, nonce: '0x1234' },
      { ...p, signature: 'not hex' },
      { ...p, from: '0x1234', to: 7 },
      { ...p, validBefore: '-1', validAfter: '1.5', value: 10000 },
      {},
      null,
    ];
    for (const value of values) expect(answer(AuthorizationPayloadSchema, value), JSON.stringify(value)).toEqual(answer(Types.AuthorizationPayloadSchema, value));
  });
});
