import { OAUTH } from './settings.js';

// Where the authorization server and its one protected resource live, and the documents that say so: RFC 9728
// (protected resource metadata) and RFC 8414 (authorization server metadata). Both are built from the api origin's
// public URL, read at request time (with port 0 it is known only once the listener is up).

/** The issuer: the api origin, without a trailing slash (RFC 8414 §2: no query, no fragment). */
export const issuerOf = (apiUrl: string): string => apiUrl.replace(/\/+$/, '');

/** The MCP endpoint's canonical URI: the `resource` every token is issued for (RFC 8707, the MCP spec). */
export const resourceOf = (apiUrl: string): string => `${issuerOf(apiUrl)}${OAUTH.resourcePath}`;

/** RFC 9728 §3.1: the well-known path inserted before the resource's own path. */
export const resourceMetadataUrlOf = (apiUrl: string): string => `${issuerOf(apiUrl)}/.well-known/oauth-protected-resource${OAUTH.resourcePath}`;

/**
 * Whether a `resource` parameter names our MCP endpoint. Compared as parsed URLs (scheme and host are
 * case-insensitive, default ports implied), one trailing slash tolerated; a fragment never (RFC 8707 §2).
 */
export function isOurResource(value: string, apiUrl: string): boolean {
  if (!URL.canParse(value) || value.includes('#')) return false;
  const given = new URL(value);
  const ours = new URL(resourceOf(apiUrl));
  const path = (url: URL) => url.pathname.replace(/\/$/, '');
  return given.origin === ours.origin && path(given) === path(ours) && given.search === '';
}

export function protectedResourceMetadata(apiUrl: string) {
  return {
    resource: resourceOf(apiUrl),
    authorization_servers: [issuerOf(apiUrl)],
    scopes_supported: [OAUTH.scope],
    bearer_methods_supported: ['header'],
    resource_name: 'Tollgate wallet (MCP)',
  };
}

export function authorizationServerMetadata(apiUrl: string) {
  const issuer = issuerOf(apiUrl);
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    registration_endpoint: `${issuer}/oauth/register`,
    scopes_supported: [OAUTH.scope],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    code_challenge_methods_supported: ['S256'],
    // RFC 9207: every authorization response names us, so a client talking to several servers can tell who answered.
    authorization_response_iss_parameter_supported: true,
  };
}

/**
 * The `WWW-Authenticate` challenge of a 401 from the protected resource (RFC 6750 §3, RFC 9728 §5.1): where its
 * metadata is and the scope it wants; with `error="invalid_token"` when a token was presented and refused (with no
 * credential at all, RFC 6750 says no error code).
 */
export function bearerChallenge(apiUrl: string, refused?: { description: string }): string {
  const params = [`resource_metadata="${resourceMetadataUrlOf(apiUrl)}"`, `scope="${OAUTH.scope}"`];
  // A quoted-string may not hold `"` or `\` unescaped; the description is ours, but stays safe whatever it says.
  if (refused) params.push('error="invalid_token"', `error_description="${refused.description.replace(/…/g, '...').replace(/["\\]/g, "'").replace(/[^\x20-\x7e]/g, '?')}"`);
  return `Bearer ${params.join(', ')}`;
}
