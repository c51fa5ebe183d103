import { z } from 'zod';
import { classifyAddress } from '../ip-policy.js';
import { serverSettings } from '../server-settings.js';
import { defineSettings, optionalString, optionalUrl, type EnvOf } from '../settings.js';

/** The dashboard's sign-in through an OpenID provider: Authorization Code with PKCE, in the browser. */
export interface OidcSignIn {
  /** Exactly as the provider spells it (an id_token's `iss` and its discovery document's `issuer` must equal it). */
  issuer: string;
  /** A public client (no secret) registered with the redirect URI `{PUBLIC_BASE_URL}/app/`. */
  clientId: string;
  scope: string;
  /** Which of the token response's tokens the API is sent. */
  token: 'id_token' | 'access_token';
}

export interface IdentityConfig {
  /**
   * Identity tokens: verified against IDENTITY_JWKS_URL (else the dev issuer's key) for `issuer` and
   * `audience`. `oidc`: the provider the dashboard signs in through (docs/web.md#signing-in), or null.
   */
  identity: { jwksUrl: string | null; issuer: string; audience: string; oidc: OidcSignIn | null };
  /** The dev identity issuer on a listen address other machines may reach (serve refuses it; see devIdentityProblems). */
  devIdentityProblems: string[];
}

// Applied in load, not in the schema: unset, the OpenID variables mean "no provider sign-in" to oidcProblems.
const FALLBACKS = { IDENTITY_ISSUER: 'tollgate-dev', IDENTITY_AUDIENCE: 'tollgate', IDENTITY_OIDC_SCOPE: 'openid', IDENTITY_OIDC_TOKEN: 'id_token' } as const;

const env = {
  IDENTITY_JWKS_URL: optionalUrl,
  IDENTITY_ISSUER: optionalString,
  IDENTITY_AUDIENCE: optionalString,
  IDENTITY_OIDC_ISSUER: optionalUrl,
  IDENTITY_OIDC_CLIENT_ID: z.string().regex(/^[\x21-\x7E]{1,200}$/, 'must be 1-200 printable characters without spaces').optional(),
  IDENTITY_OIDC_SCOPE: z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/, 'must be scope names separated by single spaces').optional(),
  IDENTITY_OIDC_TOKEN: z.enum(['id_token', 'access_token']).optional(),
  ALLOW_DEV_IDENTITY: z.enum(['0', '1']).default('0'),
};
const reads = { HOST: serverSettings.env.HOST };
type IdentityEnv = EnvOf<typeof env & typeof reads>;

/** Identity tokens (platform/auth/identity.ts) and the dashboard's OpenID sign-in. */
export const identitySettings = defineSettings({
  env,
  reads,
  fallbacks: FALLBACKS,
  load: (e): IdentityConfig => ({
    identity: {
      jwksUrl: e.IDENTITY_JWKS_URL ?? null,
      issuer: e.IDENTITY_ISSUER ?? FALLBACKS.IDENTITY_ISSUER,
      audience: e.IDENTITY_AUDIENCE ?? FALLBACKS.IDENTITY_AUDIENCE,
      oidc:
        e.IDENTITY_OIDC_ISSUER && e.IDENTITY_OIDC_CLIENT_ID
          ? { issuer: e.IDENTITY_OIDC_ISSUER, clientId: e.IDENTITY_OIDC_CLIENT_ID, scope: e.IDENTITY_OIDC_SCOPE ?? FALLBACKS.IDENTITY_OIDC_SCOPE, token: e.IDENTITY_OIDC_TOKEN ?? FALLBACKS.IDENTITY_OIDC_TOKEN }
          : null,
    },
    devIdentityProblems: devIdentityProblems(e),
  }),
  problems: oidcProblems,
  devKeys: (e) => (e.IDENTITY_JWKS_URL ? [] : ['IDENTITY_JWKS_URL']),
});

/**
 * Without IDENTITY_JWKS_URL the dev issuer signs identity tokens, and on the devchain its
 * POST /dev/identity/token mints one for any user to whoever reaches the api port. On loopback only this
 * machine can; on 0.0.0.0 or a public address anyone could. serve refuses that unless ALLOW_DEV_IDENTITY=1
 * says the address is reachable from this machine only all the same (compose.yaml: the container listens
 * on 0.0.0.0, its ports are published on 127.0.0.1).
 */
function devIdentityProblems(e: IdentityEnv): string[] {
  if (e.IDENTITY_JWKS_URL || e.ALLOW_DEV_IDENTITY === '1' || isLoopbackHost(e.HOST)) return [];
  return [
    `HOST: ${e.HOST} is not a loopback address and IDENTITY_JWKS_URL is unset, so the dev identity issuer would mint tokens for any user to whoever reaches this node; ` +
      'set IDENTITY_JWKS_URL (your identity provider), or HOST=127.0.0.1, or ALLOW_DEV_IDENTITY=1 if only this machine can reach the address',
  ];
}

/** 127.0.0.0/8, ::1 (also IPv4-mapped) or localhost: only this machine connects. */
function isLoopbackHost(host: string): boolean {
  return host.toLowerCase() === 'localhost' || classifyAddress(host) === 'loopback';
}

const OIDC_VARIABLES = ['IDENTITY_OIDC_ISSUER', 'IDENTITY_OIDC_CLIENT_ID', 'IDENTITY_OIDC_SCOPE', 'IDENTITY_OIDC_TOKEN'] as const;

/** The dashboard's OpenID sign-in: all of it or none, and only where the API can verify what it brings back. */
function oidcProblems(e: IdentityEnv): string[] {
  const set = OIDC_VARIABLES.filter((name) => e[name] !== undefined);
  if (set.length === 0) return [];
  const problems: string[] = [];
  for (const name of ['IDENTITY_OIDC_ISSUER', 'IDENTITY_OIDC_CLIENT_ID'] as const) {
    if (!e[name]) problems.push(`${name}: required with ${set.join(', ')} (the dashboard's sign-in through the identity provider needs the issuer and the client id)`);
  }
  // The provider's tokens verify only against its JWKS: without IDENTITY_JWKS_URL the dev issuer runs and refuses them.
  if (!e.IDENTITY_JWKS_URL) problems.push(`IDENTITY_JWKS_URL: required with ${set.join(', ')} (the API verifies the provider's tokens against its JWKS)`);
  const issuer = e.IDENTITY_OIDC_ISSUER;
  if (issuer) {
    const url = new URL(issuer);
    // A browser sends the authorization code and PKCE verifier there: https, but for a provider on this machine (tests, development).
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && (url.hostname === 'localhost' || classifyAddress(url.hostname) === 'loopback'))) {
      problems.push('IDENTITY_OIDC_ISSUER: must be an https URL (http only on a loopback host such as 127.0.0.1)');
    }
    if (url.search || url.hash || url.username || url.password) problems.push('IDENTITY_OIDC_ISSUER: must have no query, fragment or credentials (an OpenID issuer is a plain URL)');
  }
  const token = e.IDENTITY_OIDC_TOKEN ?? FALLBACKS.IDENTITY_OIDC_TOKEN;
  const scope = (e.IDENTITY_OIDC_SCOPE ?? FALLBACKS.IDENTITY_OIDC_SCOPE).split(' ');
  // An id_token comes back only for the openid scope; its iss and aud are the provider's issuer and this client, so the API must expect exactly those.
  if (token === 'id_token') {
    if (!scope.includes('openid')) problems.push('IDENTITY_OIDC_SCOPE: must include openid with IDENTITY_OIDC_TOKEN=id_token (no id_token comes back without it)');
    if (issuer && e.IDENTITY_ISSUER !== issuer) problems.push(`IDENTITY_ISSUER: must be IDENTITY_OIDC_ISSUER (${issuer}) with IDENTITY_OIDC_TOKEN=id_token (an id_token's iss is the provider's issuer)`);
    if (e.IDENTITY_OIDC_CLIENT_ID && e.IDENTITY_AUDIENCE !== e.IDENTITY_OIDC_CLIENT_ID) {
      problems.push('IDENTITY_AUDIENCE: must be IDENTITY_OIDC_CLIENT_ID with IDENTITY_OIDC_TOKEN=id_token (an id_token\'s aud is the client id)');
    }
  }
  return problems;
}
