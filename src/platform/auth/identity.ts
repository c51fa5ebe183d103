import {
  calculateJwkThumbprint,
  createLocalJWKSet,
  createRemoteJWKSet,
  exportJWK,
  generateKeyPair,
  importJWK,
  jwtVerify,
  SignJWT,
  type JSONWebKeySet,
  type JWK,
  type JWTPayload,
} from 'jose';
import { loadOrCreateDevSecret } from '../data-dir.js';

export interface IdentitySettings {
  jwksUrl: string | null;
  issuer: string;
  audience: string;
}

export interface VerifiedIdentity {
  userId: string;
  claims: JWTPayload;
}

export type IdentityVerifier = (token: string) => Promise<VerifiedIdentity>;

// Asymmetric algorithms only: `none` and HMAC algorithms can never verify against a JWKS.
const ALGORITHMS = ['ES256', 'ES384', 'RS256', 'RS384', 'RS512', 'PS256', 'EdDSA'];

export function createIdentityVerifier(settings: IdentitySettings, devIssuer: DevIdentityIssuer | null): IdentityVerifier {
  const keys = settings.jwksUrl
    ? createRemoteJWKSet(new URL(settings.jwksUrl))
    : createLocalJWKSet(requireDev(devIssuer).jwks());
  return async (token) => {
    const { payload } = await jwtVerify(token, keys, {
      issuer: settings.issuer,
      audience: settings.audience,
      algorithms: ALGORITHMS,
      requiredClaims: ['sub', 'exp'],
    });
    return { userId: payload.sub as string, claims: payload };
  };
}

function requireDev(devIssuer: DevIdentityIssuer | null): DevIdentityIssuer {
  if (!devIssuer) throw new Error('IDENTITY_JWKS_URL is unset and no dev issuer is running');
  return devIssuer;
}

/**
 * The embedded identity provider: an ES256 key kept in the data dir, a JWKS, and a signer for
 * `tollgate dev token`. Only used when IDENTITY_JWKS_URL is unset.
 */
export class DevIdentityIssuer {
  private constructor(
    private readonly privateJwk: JWK,
    private readonly publicJwk: JWK,
    readonly issuer: string,
    readonly audience: string,
  ) {}

  static async load(dataDir: string | null, issuer: string, audience: string): Promise<DevIdentityIssuer> {
    const generated = await newKeyJson();
    const privateJwk = JSON.parse(loadOrCreateDevSecret(dataDir, 'identity-es256.jwk.json', () => generated)) as JWK;
    const { d: _d, ...publicJwk } = privateJwk;
    return new DevIdentityIssuer(privateJwk, publicJwk, issuer, audience);
  }

  jwks(): JSONWebKeySet {
    return { keys: [this.publicJwk] };
  }

  async sign(sub: string, ttlSeconds = 12 * 3600, extra: JWTPayload = {}): Promise<string> {
    const key = await importJWK(this.privateJwk, 'ES256');
    return new SignJWT(extra)
      .setProtectedHeader({ alg: 'ES256', kid: this.publicJwk.kid, typ: 'JWT' })
      .setSubject(sub)
      .setIssuer(this.issuer)
      .setAudience(this.audience)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
      .sign(key);
  }
}

async function newKeyJson(): Promise<string> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  jwk.kid = await calculateJwkThumbprint(jwk);
  jwk.alg = 'ES256';
  jwk.use = 'sig';
  return JSON.stringify(jwk);
}
