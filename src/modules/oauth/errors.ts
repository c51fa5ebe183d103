import { ApiError } from '../../platform/http/errors.js';

/**
 * An error of the OAuth protocol endpoints (/oauth/register, /oauth/token): answered as RFC 6749 §5.2 and RFC 7591
 * §3.2.2 say, `{ error, error_description }`, never in the envelope (OAuth clients parse exactly that shape).
 */
export class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = 'OAuthError';
  }

  body(): { error: string; error_description: string } {
    return { error: this.error, error_description: this.description };
  }
}

export const oauthErrors = {
  invalidRequest: (description: string) => new OAuthError(400, 'invalid_request', description),
  /** RFC 6749 §5.2: 401, with a Basic challenge when the client tried Basic. */
  invalidClient: (description: string, triedBasic: boolean) =>
    new OAuthError(401, 'invalid_client', description, triedBasic ? { 'www-authenticate': 'Basic realm="tollgate-oauth"' } : {}),
  invalidGrant: (description: string) => new OAuthError(400, 'invalid_grant', description),
  unsupportedGrantType: (grantType: string) => new OAuthError(400, 'unsupported_grant_type', `grant_type ${grantType} is not supported: use authorization_code or refresh_token`),
  invalidScope: (description: string) => new OAuthError(400, 'invalid_scope', description),
  invalidTarget: (description: string) => new OAuthError(400, 'invalid_target', description),
  invalidRedirectUri: (description: string) => new OAuthError(400, 'invalid_redirect_uri', description),
  invalidClientMetadata: (description: string) => new OAuthError(400, 'invalid_client_metadata', description),
  tooManyRegistrations: (retryAfterSeconds: number) =>
    new OAuthError(429, 'invalid_request', `Too many client registrations from this address; retry in ${retryAfterSeconds} s`, { 'retry-after': String(retryAfterSeconds) }),
  serverError: () => new OAuthError(500, 'server_error', 'Internal server error'),
};

/** Errors of the dashboard's routes (/v1/oauth/…), in the envelope like every /v1 route. */
export const consentErrors = {
  /** The authorization request itself cannot be answered (unknown client, unregistered redirect URI, bad parameters): said to the user, never redirected. */
  invalidAuthorizationRequest: (error: string, message: string) => new ApiError(400, 'invalid_authorization_request', message, { error }),
  /** 403, not 401: the user's own sign-in is fine (a 401 would sign them out); the credential they typed is not. */
  managementCredentialRefused: () =>
    new ApiError(403, 'management_credential_refused', 'The management credential is unknown or revoked: wallets belong to the management credential (svc_api_…) that created them'),
  walletNotFound: () => new ApiError(404, 'wallet_not_found', 'No wallet of this management credential has that id'),
  walletNotActive: (status: string) => new ApiError(409, 'wallet_not_active', `The wallet is ${status}; only an active wallet can be connected`, { status }),
  grantNotFound: () => new ApiError(404, 'grant_not_found', 'No connected app of yours has that id'),
};
