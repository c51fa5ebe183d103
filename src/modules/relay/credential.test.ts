import { Credential, PaymentRequest, Receipt } from 'mppx';
import { Types } from 'mppx/evm';
import { privateKeyToAccount } from 'viem/accounts';
import { beforeAll, describe, expect, it } from 'vitest';
import { mppxCredential, USDG_4663, type MppxCredentialResult } from '../../../test/relay/mppx-client.js';
import { parseRelayBody, relayReceipt, type RelayPayment, type RelayRejection } from './credential.js';

const account = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');
const recipient = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC' as const;
const asset = USDG_4663;

/** What the merchant's server would POST: JSON on the wire, so objects arrive as plain parsed JSON. */
const bodyOf = (credential: unknown, request: unknown) => JSON.parse(JSON.stringify({ credential, request }));
const clone = <T>(value: T): T => structuredClone(value);

function accepted(result: RelayPayment | RelayRejection): RelayPayment {
  if ('code' in result) throw new Error(`rejected: ${result.status} ${result.code}: ${result.message}`);
  return result;
}

function expectRejected(result: RelayPayment | RelayRejection, status: number, code: string) {
  expect('code' in result ? { status: result.status, code: result.code } : 'accepted').toEqual({ status, code });
}

let paid: MppxCredentialResult;
beforeAll(async () => {
  paid = await mppxCredential({ account, amount: '10000', recipient, asset });
});

describe('parseRelayBody: an mppx credential', () => {
  it('as mppx’s parsed object: the normalized payment', () => {
    const payment = accepted(parseRelayBody(bodyOf(paid.credential, paid.request), asset));
    const payload = paid.credential.payload as Types.AuthorizationPayload;
    expect(payment).toEqual({
      challengeId: paid.challenge.id,
      realm: 'merchant.example.com',
      source: `did:pkh:eip155:4663:${account.address}`,
      payer: account.address,
      request: { amount: '10000', currency: asset.address, recipient, chainId: 4663, decimals: 6 },
      authorization: {
        from: account.address,
        to: recipient,
        value: '10000',
        validAfter: '0',
        validBefore: payload.validBefore,
        nonce: Types.challengeHash(paid.challenge),
      },
      signature: payload.signature,
      fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    // The client signs until the challenge expires (mppx's default: 5 minutes).
    expect(Number(payload.validBefore)).toBe(Math.floor(Date.parse(paid.challenge.expires!) / 1000));
  });

  it('as the serialized Authorization value (`Payment …`): the same payment, the same fingerprint', () => {
    expect(paid.serialized).toMatch(/^Payment [A-Za-z0-9_-]+$/);
    const fromObject = accepted(parseRelayBody(bodyOf(paid.credential, paid.request), asset));
    expect(accepted(parseRelayBody(bodyOf(paid.serialized, paid.request), asset))).toEqual(fromObject);
  });

  it('as the decoded wire JSON (challenge.request still base64url): the same payment', () => {
    const wire = JSON.parse(Buffer.from(paid.serialized.slice('Payment '.length), 'base64url').toString());
    expect(typeof wire.challenge.request).toBe('string');
    const fromObject = accepted(parseRelayBody(bodyOf(paid.credential, paid.request), asset));
    expect(accepted(parseRelayBody(bodyOf(wire, paid.request), asset))).toEqual(fromObject);
  });

  it('compares the request canonically: key order and address case do not matter', () => {
    const r = paid.request as Types.ChargeRequest;
    const reordered = {
      recipient: r.recipient.toLowerCase(),
      methodDetails: { decimals: 6, credentialTypes: ['authorization'], chainId: 4663 },
      currency: r.currency.toUpperCase().replace('0X', '0x'),
      amount: '10000',
    };
    const payment = accepted(parseRelayBody(bodyOf(paid.credential, reordered), asset));
    expect(payment.request).toEqual({ amount: '10000', currency: asset.address, recipient, chainId: 4663, decimals: 6 });
  });

  it('fingerprints differ between two credentials for the same request', async () => {
    const other = await mppxCredential({ account, amount: '10000', recipient, asset });
    const a = accepted(parseRelayBody(bodyOf(paid.credential, paid.request), asset));
    const b = accepted(parseRelayBody(bodyOf(other.credential, other.request), asset));
    expect(b.challengeId).not.toBe(a.challengeId);
    expect(b.fingerprint).not.toBe(a.fingerprint);
  });

  it('accepts a source with the payer address in another hex case', () => {
    const credential = { ...clone(paid.credential), source: `did:pkh:eip155:4663:${account.address.toLowerCase()}` };
    expect(accepted(parseRelayBody(bodyOf(credential, paid.request), asset)).source).toBe(credential.source);
  });
});

describe('parseRelayBody: rejections', () => {
  it('400 invalid_request: not an object, no credential, no request', () => {
    for (const body of [null, 'Payment abc', [paid.credential, paid.request], 42]) expectRejected(parseRelayBody(body, asset), 400, 'invalid_request');
    expectRejected(parseRelayBody({ request: paid.request }, asset), 400, 'invalid_request');
    expectRejected(parseRelayBody({ credential: paid.serialized }, asset), 400, 'invalid_request');
    expectRejected(parseRelayBody({ credential: null, request: paid.request }, asset), 400, 'invalid_request');
  });

  it('400 invalid_credential: a string or object that does not parse', () => {
    const bad: unknown[] = [
      'Bearer abc', // not the Payment scheme
      'Payment', // nothing after it
      'Payment !!!', // not base64url JSON
      `Payment ${Buffer.from(JSON.stringify({ payload: {} })).toString('base64url')}`, // no challenge
      42,
      { payload: paid.credential.payload }, // no challenge
      { ...clone(paid.credential), challenge: { ...paid.credential.challenge, id: '' } }, // mppx: id min length 1
      { ...clone(paid.credential), challenge: { ...paid.credential.challenge, request: '%%%' } },
      { ...clone(paid.credential), payload: undefined },
      { ...clone(paid.credential), payload: 'authorization' },
    ];
    for (const credential of bad) expectRejected(parseRelayBody(bodyOf(credential, paid.request), asset), 400, 'invalid_credential');
  });

  it('400 invalid_credential: a payload that is not an authorization of the right shape', () => {
    const payload = paid.credential.payload as Record<string, unknown>;
    const shapes = [
      { ...payload, type: undefined },
      { ...payload, nonce: '0x1234' }, // not bytes32
      { ...payload, signature: 'not hex' },
      { ...payload, from: '0x1234' },
      { ...payload, validBefore: '-1' },
      { ...payload, value: 10000 }, // a number, not an atomic string
    ];
    for (const shape of shapes) {
      expectRejected(parseRelayBody(bodyOf({ ...clone(paid.credential), payload: shape }, paid.request), asset), 400, 'invalid_credential');
    }
  });

  it('400 invalid_credential: a source that is not the payer', () => {
    const credential = { ...clone(paid.credential), source: `did:pkh:eip155:4663:${recipient}` };
    expectRejected(parseRelayBody(bodyOf(credential, paid.request), asset), 400, 'invalid_credential');
  });

  it('400 invalid_payment_request: a request that is not mppx’s ChargeRequest', () => {
    const r = paid.request as Types.ChargeRequest;
    const requests: unknown[] = [
      'eyJhbW91bnQiOiIxMDAwMCJ9',
      { ...r, amount: '0.01' }, // display units, not atomic
      { ...r, amount: '0' },
      { ...r, currency: 'USDG' },
      { ...r, recipient: '0x1234' },
      { ...r, methodDetails: undefined },
      { ...r, methodDetails: { ...r.methodDetails, chainId: '4663' } },
      { ...r, methodDetails: { ...r.methodDetails, credentialTypes: ['voucher'] } },
    ];
    for (const request of requests) expectRejected(parseRelayBody(bodyOf(paid.credential, request), asset), 400, 'invalid_payment_request');
  });

  it('422 unsupported_method: another method, intent or credential type', () => {
    const c = clone(paid.credential);
    const cases = [
      { ...c, challenge: { ...c.challenge, method: 'tempo' } },
      { ...c, challenge: { ...c.challenge, intent: 'session' } },
      { ...c, payload: { type: 'permit2', signature: '0x1234' } },
      { ...c, payload: { type: 'transaction', signature: '0x02f8' } },
    ];
    for (const credential of cases) expectRejected(parseRelayBody(bodyOf(credential, paid.request), asset), 422, 'unsupported_method');
    // The serialized form too.
    expectRejected(parseRelayBody(bodyOf(Credential.serialize(cases[0]), paid.request), asset), 422, 'unsupported_method');
  });

  it('422 unsupported_method: a request with splits', () => {
    const r = paid.request as Types.ChargeRequest;
    const split = { ...r, methodDetails: { ...r.methodDetails, splits: [{ amount: '100', recipient }] } };
    expectRejected(parseRelayBody(bodyOf(paid.credential, split), asset), 422, 'unsupported_method');
  });

  it('422 unsupported_asset: another token, chain or decimals (credentials mppx signed for them)', async () => {
    const otherToken = await mppxCredential({ account, amount: '10000', recipient, asset: { ...asset, address: '0x20c0000000000000000000000000000000000001' } });
    expectRejected(parseRelayBody(bodyOf(otherToken.credential, otherToken.request), asset), 422, 'unsupported_asset');
    const otherChain = await mppxCredential({ account, amount: '10000', recipient, asset: { ...asset, chainId: 1, network: 'eip155:1' } });
    expectRejected(parseRelayBody(bodyOf(otherChain.serialized, otherChain.request), asset), 422, 'unsupported_asset');
    const otherDecimals = await mppxCredential({ account, amount: '10000', recipient, asset: { ...asset, decimals: 18 } });
    expectRejected(parseRelayBody(bodyOf(otherDecimals.credential, otherDecimals.request), asset), 422, 'unsupported_asset');
  });

  it('422 request_mismatch: the request is not the challenge’s', async () => {
    const r = paid.request as Types.ChargeRequest;
    const others: unknown[] = [
      { ...r, amount: '10001' },
      { ...r, recipient: account.address },
      { ...r, description: 'an extra field the challenge does not have' },
      { ...r, methodDetails: { chainId: 4663, decimals: 6 } }, // credentialTypes dropped
    ];
    for (const request of others) expectRejected(parseRelayBody(bodyOf(paid.credential, request), asset), 422, 'request_mismatch');
    // And the other way: the challenge carries a field the sent request lacks.
    const described = await mppxCredential({ account, amount: '10000', recipient, asset, externalId: 'order-1' });
    expect((described.request as Types.ChargeRequest).externalId).toBe('order-1');
    expectRejected(parseRelayBody(bodyOf(described.credential, paid.request), asset), 422, 'request_mismatch');
    accepted(parseRelayBody(bodyOf(described.credential, described.request), asset));
  });

  it('422 request_mismatch: the authorization pays another address than the recipient', () => {
    const credential = clone(paid.credential);
    (credential.payload as Types.AuthorizationPayload).to = account.address;
    expectRejected(parseRelayBody(bodyOf(credential, paid.request), asset), 422, 'request_mismatch');
  });

  it('422 request_mismatch: the authorization moves another value than the amount', () => {
    const credential = clone(paid.credential);
    (credential.payload as Types.AuthorizationPayload).value = '9999';
    expectRejected(parseRelayBody(bodyOf(credential, paid.request), asset), 422, 'request_mismatch');
  });

  it('422 challenge_binding_mismatch: an authorization signed for another challenge', async () => {
    // Two real credentials for identical terms; B's signed authorization presented with A's challenge.
    const other = await mppxCredential({ account, amount: '10000', recipient, asset });
    const credential = { ...clone(paid.credential), payload: other.credential.payload };
    expectRejected(parseRelayBody(bodyOf(credential, paid.request), asset), 422, 'challenge_binding_mismatch');
    expectRejected(parseRelayBody(bodyOf(Credential.serialize(credential), paid.request), asset), 422, 'challenge_binding_mismatch');
  });

  it('422 challenge_binding_mismatch: an authorization re-signed with a nonce of its own', async () => {
    const payload = { ...(paid.credential.payload as Types.AuthorizationPayload) };
    payload.nonce = `0x${'ab'.repeat(32)}`;
    payload.signature = await account.signTypedData({
      domain: Types.authorizationDomain({ authorization: { name: asset.name, version: asset.version }, chainId: asset.chainId, currency: asset.address }),
      types: Types.authorizationTypes,
      primaryType: 'TransferWithAuthorization',
      message: { from: account.address, to: recipient, value: 10000n, validAfter: 0n, validBefore: BigInt(payload.validBefore), nonce: payload.nonce as `0x${string}` },
    });
    expectRejected(parseRelayBody(bodyOf({ ...clone(paid.credential), payload }, paid.request), asset), 422, 'challenge_binding_mismatch');
  });

  it('422 challenge_binding_mismatch: a forged challenge id (the HMAC is the merchant’s to check, the binding still catches it)', () => {
    const credential = { ...clone(paid.credential), challenge: { ...paid.credential.challenge, id: 'forged' } };
    expectRejected(parseRelayBody(bodyOf(credential, paid.request), asset), 422, 'challenge_binding_mismatch');
  });
});

describe('relayReceipt', () => {
  const receipt = relayReceipt({ challengeId: 'abc', chainId: 4663, reference: `0x${'12'.repeat(32)}`, timestamp: '2026-01-02T03:04:05.000Z' });

  it('is the evm charge receipt: method, challengeId, chainId, reference, status, timestamp', () => {
    expect(receipt).toEqual({ challengeId: 'abc', chainId: 4663, method: 'evm', reference: `0x${'12'.repeat(32)}`, status: 'success', timestamp: '2026-01-02T03:04:05.000Z' });
  });

  it('round-trips through mppx’s Payment-Receipt encoding, keeping the evm fields', () => {
    const header = Receipt.serialize(receipt);
    expect(header).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(Receipt.deserialize(header)).toEqual(receipt);
  });

  it('refuses a timestamp mppx would not accept', () => {
    expect(() => relayReceipt({ challengeId: 'abc', chainId: 4663, reference: '0x12', timestamp: 'yesterday' })).toThrow();
  });
});

// Keep the helper honest: the request it returns is the one mppx embedded in the challenge.
describe('mppxCredential', () => {
  it('returns mppx’s own challenge, request and serialization', () => {
    expect(Credential.deserialize(paid.serialized)).toEqual(paid.credential);
    expect(paid.credential.challenge).toEqual(paid.challenge);
    expect(PaymentRequest.serialize(paid.request)).toBe(PaymentRequest.serialize(paid.challenge.request));
  });
});
