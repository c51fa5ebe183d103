import { Credential } from 'mppx';
import { privateKeyToAccount } from 'viem/accounts';
import { beforeAll, describe, expect, it } from 'vitest';
import { mppxCredential, USDG_4663, type MppxCredentialResult } from '../../../test/relay/mppx-client.js';
import { decodeBase64Json, deserializeCredential } from './credential-wire.js';

const account = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');
const recipient = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC' as const;
const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
const wireOf = (serialized: string) => JSON.parse(Buffer.from(serialized.slice('Payment '.length), 'base64url').toString()) as Record<string, any>;

/** What mppx answers for a header: the credential, or its error's class and message. */
function mppxAnswer(header: string): unknown {
  try {
    return { credential: Credential.deserialize(header) };
  } catch (error) {
    return { error: (error as Error).name, message: (error as Error).message };
  }
}
function ourAnswer(header: string): unknown {
  try {
    return { credential: deserializeCredential(header) };
  } catch (error) {
    return { error: (error as Error).name, message: (error as Error).message };
  }
}

let paid: MppxCredentialResult;
let described: MppxCredentialResult[];
beforeAll(async () => {
  paid = await mppxCredential({ account, amount: '10000', recipient, asset: USDG_4663 });
  // Descriptions of 0-3 extra characters: the base64url text ends on every length mod 4.
  described = await Promise.all(['', 'a', 'ab', 'abc'].map((tail) => mppxCredential({ account, amount: '10000', recipient, asset: USDG_4663, description: `order${tail}` })));
});

describe('deserializeCredential: the same answer as mppx’s Credential.deserialize', () => {
  it('for real credentials (every base64url length mod 4) and legacy shapes', () => {
    const headers = [paid.serialized, ...described.map((d) => d.serialized)];
    expect(new Set(headers.map((h) => (h.length - 'Payment '.length) % 4)).size).toBeGreaterThan(1);
    const wire = wireOf(paid.serialized);
    headers.push(
      `payment   ${paid.serialized.slice('Payment '.length)}`, // scheme in another case, more spaces
      `Payment ${b64({ ...wire, challenge: { ...wire.challenge, opaque: { order: '7' } } })}`, // legacy object opaque
      `Payment ${b64({ ...wire, challenge: { ...wire.challenge, opaque: 'b3JkZXI' } })}`,
      `Payment ${b64({ ...wire, challenge: { ...wire.challenge, meta: { dropped: 'yes' } } })}`, // meta on the wire is ignored
      `Payment ${b64({ ...wire, source: '' })}`, // a falsy source is dropped
      `Payment ${b64({ ...wire, source: 42 })}`, // a truthy one kept as is (the relay refuses it later)
      `Payment ${b64({ ...wire, extra: 'ignored' })}`,
      `Payment ${b64(`\uFEFF${JSON.stringify(wire)}`)}`, // a leading BOM, dropped by both UTF-8 decoders
    );
    for (const header of headers) expect(ourAnswer(header), header.slice(0, 60)).toEqual(mppxAnswer(header));
  });

  it('for malformed headers: the same error, whichever base64 decoder reads them', () => {
    const wire = wireOf(paid.serialized);
    const encoded = paid.serialized.slice('Payment '.length);
    const standard = Buffer.from(JSON.stringify(wire)).toString('base64'); // '+' '/' and '=' padding
    const headers = [
      '',
      'Payment',
      'Payment ',
      'Bearer abc',
      'Payment !!!',
      'Payment not-base64-json',
      `Payment ${encoded}==`,
      `Payment ${standard}`,
      `Payment ${encoded.slice(0, -1)}`,
      `Payment ${encoded.slice(1)}`,
      `Payment ${encoded}\n`,
      // Node's decoder skips a stray character where mppx's reads it as zero bits: mppx's decoder reads these.
      `Payment ${encoded.slice(0, 12)}.${encoded.slice(12)}`,
      `Payment ${encoded.slice(0, 12)} ${encoded.slice(12)}`,
      `Payment ${b64({ payload: {} })}`, // no challenge
      `Payment ${b64({ ...wire, challenge: { ...wire.challenge, request: undefined } })}`,
      `Payment ${b64({ ...wire, challenge: { ...wire.challenge, request: 42 } })}`,
      `Payment ${b64({ ...wire, challenge: { ...wire.challenge, request: '%%%' } })}`,
      `Payment ${b64({ ...wire, challenge: { ...wire.challenge, request: b64('[1,2]') } })}`, // not a record
      `Payment ${b64({ ...wire, challenge: { ...wire.challenge, id: '' } })}`,
      `Payment ${b64({ ...wire, challenge: { ...wire.challenge, expires: 'tomorrow' } })}`,
      `Payment ${b64({ ...wire, challenge: { ...wire.challenge, opaque: { n: 1 } } })}`,
      `Payment ${b64('null')}`,
    ];
    for (const header of headers) expect(ourAnswer(header), JSON.stringify(header.slice(0, 60))).toEqual(mppxAnswer(header));
  });
});

describe('deserializeCredential: the JSON guard, where mppx has none', () => {
  it('refuses a challenge request nested past the guard, a U+0000 or a lone surrogate, as undecodable', () => {
    const wire = wireOf(paid.serialized);
    const deep = b64(`{"amount":"10000","extra":${'['.repeat(40)}${']'.repeat(40)}}`);
    const hostile = [
      { ...wire, challenge: { ...wire.challenge, request: deep } },
      { ...wire, challenge: { ...wire.challenge, id: 'a\u0000b' } },
      { ...wire, challenge: { ...wire.challenge, realm: 'x\ud800' } },
      { ...wire, payload: { ...wire.payload, nested: JSON.parse(`${'['.repeat(40)}${']'.repeat(40)}`) } },
    ];
    for (const credential of hostile) {
      const header = `Payment ${b64(credential)}`;
      expect((mppxAnswer(header) as { credential?: unknown }).credential).toBeDefined(); // mppx takes it
      expect(ourAnswer(header)).toEqual({ error: 'InvalidCredentialEncodingError', message: 'Invalid base64url or JSON.' });
    }
  });

  it('decodeBase64Json: mppx’s PaymentRequest decoding, guarded', () => {
    expect(decodeBase64Json(b64({ a: [1, { b: 'c' }] }))).toEqual({ a: [1, { b: 'c' }] });
    // Padded standard base64 goes to mppx's decoder: the same value, the same guard.
    const padded = Buffer.from('{"a":"\u00e9?"}').toString('base64');
    expect(padded).toMatch(/=$/);
    expect(decodeBase64Json(padded)).toEqual({ a: '\u00e9?' });
    expect(() => decodeBase64Json(b64('{"a":"\\u0000"}'))).toThrow(/U\+0000/);
    expect(() => decodeBase64Json(Buffer.from('{"a":"\\u0000"}').toString('base64'))).toThrow(/U\+0000/);
    expect(() => decodeBase64Json(b64(`${'['.repeat(33)}${']'.repeat(33)}`))).toThrow(/deeper/);
    expect(() => decodeBase64Json(42)).toThrow();
  });
});
