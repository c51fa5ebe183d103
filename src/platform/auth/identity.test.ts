import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateKeyPair, SignJWT, exportJWK, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdentityVerifier, DevIdentityIssuer, type IdentityVerifier } from './identity.js';

const settings = { jwksUrl: null, issuer: 'tollgate-dev', audience: 'tollgate' };
let dir: string;
let issuer: DevIdentityIssuer;
let verify: IdentityVerifier;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'identity-'));
  issuer = await DevIdentityIssuer.load(dir, settings.issuer, settings.audience);
  verify = createIdentityVerifier(settings, issuer);
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Another issuer object over the same key: tokens it signs differ only in the claims we vary. */
const sameKeyIssuer = (iss: string, aud: string) => DevIdentityIssuer.load(dir, iss, aud);

describe('identity tokens', () => {
  it('accepts a token of the dev issuer and yields its subject', async () => {
    await expect(verify(await issuer.sign('alice'))).resolves.toMatchObject({ userId: 'alice' });
  });

  it('keeps the signing key in the data dir across loads', async () => {
    const again = await DevIdentityIssuer.load(dir, settings.issuer, settings.audience);
    expect(again.jwks()).toEqual(issuer.jwks());
    await expect(verify(await again.sign('bob'))).resolves.toMatchObject({ userId: 'bob' });
  });

  it('refuses a wrong issuer', async () => {
    const other = await sameKeyIssuer('someone-else', settings.audience);
    await expect(verify(await other.sign('alice'))).rejects.toThrow(/iss/);
  });

  it('refuses a wrong audience', async () => {
    const other = await sameKeyIssuer(settings.issuer, 'another-app');
    await expect(verify(await other.sign('alice'))).rejects.toThrow(/aud/);
  });

  it('refuses an expired token', async () => {
    await expect(verify(await issuer.sign('alice', -60))).rejects.toThrow(/exp/);
  });

  it('refuses a token signed by an unknown key id', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'not-in-the-jwks' })
      .setSubject('alice')
      .setIssuer(settings.issuer)
      .setAudience(settings.audience)
      .setExpirationTime('1h')
      .sign(privateKey);
    await expect(verify(token)).rejects.toThrow();
  });

  it('refuses a token signed by another key under our key id', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const kid = issuer.jwks().keys[0].kid!;
    const token = await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid }).setSubject('alice').setIssuer(settings.issuer).setAudience(settings.audience).setExpirationTime('1h').sign(privateKey);
    await expect(verify(token)).rejects.toThrow(/signature/);
  });

  it('refuses alg none', async () => {
    const token = new UnsecuredJWT({}).setSubject('alice').setIssuer(settings.issuer).setAudience(settings.audience).setExpirationTime('1h').encode();
    await expect(verify(token)).rejects.toThrow();
  });

  it('refuses an HMAC token made with the public key as secret (alg confusion)', async () => {
    const jwk = issuer.jwks().keys[0];
    const secret = new TextEncoder().encode(JSON.stringify(jwk));
    const token = await new SignJWT({}).setProtectedHeader({ alg: 'HS256', kid: jwk.kid }).setSubject('alice').setIssuer(settings.issuer).setAudience(settings.audience).setExpirationTime('1h').sign(secret);
    await expect(verify(token)).rejects.toThrow();
  });

  it('refuses a token without a subject', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
    const own = createIdentityVerifier(settings, { jwks: () => ({ keys: [jwk] }) } as unknown as DevIdentityIssuer);
    const token = await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer(settings.issuer).setAudience(settings.audience).setExpirationTime('1h').sign(privateKey);
    await expect(own(token)).rejects.toThrow(/sub/);
  });
});
