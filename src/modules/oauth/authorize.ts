import type { AppContext } from '../../context.js';
import { ApiError } from '../../platform/http/errors.js';
import { newId } from '../../platform/ids.js';
import type { OAuthClients } from './clients.js';
import { consentErrors } from './errors.js';
import { isOurResource, issuerOf, resourceOf } from './metadata.js';
import { OAUTH } from './settings.js';
import type { AuthorizationParams, ConsentView } from './schemas.js';
import type { ClientRow, OAuthStore } from './store.js';
import { isLoopbackHost } from './clients.js';

/** An authorization request that cannot go on. `redirectable`: the client and its redirect URI are proven, so the error goes back there (RFC 6749 §4.1.2.1); otherwise the user is told. */
export class AuthorizationRequestError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly redirectTo: { redirectUri: string; state?: string } | null,
  ) {
    super(description);
    this.name = 'AuthorizationRequestError';
  }
}

/** An authorization request that may be shown to the user and answered. */
export interface ValidRequest {
  client: ClientRow;
  redirectUri: string;
  /** Whether the request named the redirect URI (the token request must then name it too). */
  redirectUriSent: boolean;
  state?: string;
  codeChallenge: string;
  scope: string;
  resource: string;
}

/** S256's output: 32 bytes, base64url without padding. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/**
 * The authorization endpoint's decisions (docs/mcp.md#oauth). The request is checked in two steps, in the order
 * RFC 6749 §4.1.2.1 sets: first the client and its redirect URI, which must be proven before anything is sent
 * there (an unknown client or an unregistered URI is said to the user, never redirected: no open redirector);
 * then the rest, whose errors go back to the client. The user's decision is taken on the dashboard page the
 * request is handed to, which asks both steps again: nothing it posts is trusted from the first look.
 */
export class Authorizations {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: OAuthStore,
    private readonly clients: OAuthClients,
  ) {}

  async validate(params: AuthorizationParams): Promise<ValidRequest> {
    const apiUrl = this.ctx.urls.api;
    const client = params.client_id ? await this.clients.byId(params.client_id) : undefined;
    if (!client) throw new AuthorizationRequestError('invalid_client', 'The application is not registered here (unknown client_id). Connect it again from the application.', null);
    const registered = client.redirectUris;
    const redirectUri = params.redirect_uri ?? (registered.length === 1 ? registered[0]! : undefined);
    if (redirectUri === undefined) throw new AuthorizationRequestError('invalid_request', 'The request names no redirect_uri and the application registered several.', null);
    // Exactly as registered: no normalisation, no prefix match, loopback ports included.
    if (!registered.includes(redirectUri)) throw new AuthorizationRequestError('invalid_request', `The redirect_uri ${redirectUri} is not one the application registered.`, null);

    const back = { redirectUri, state: params.state };
    const refuse = (error: string, description: string) => new AuthorizationRequestError(error, description, back);
    if (params.response_type !== 'code') throw refuse('unsupported_response_type', 'response_type must be code');
    if (params.code_challenge_method !== 'S256') throw refuse('invalid_request', 'PKCE is required with code_challenge_method S256');
    if (!params.code_challenge || !S256_CHALLENGE.test(params.code_challenge)) throw refuse('invalid_request', 'code_challenge must be the base64url SHA-256 of the code verifier (43 characters)');
    const scopes = (params.scope ?? '').split(' ').filter(Boolean);
    if (scopes.some((s) => s !== OAUTH.scope && !OAUTH.ignoredScopes.includes(s))) throw refuse('invalid_scope', `The only scope is ${OAUTH.scope}`);
    if (params.resource !== undefined && !isOurResource(params.resource, apiUrl)) throw refuse('invalid_target', `resource must be ${resourceOf(apiUrl)}`);
    return { client, redirectUri, redirectUriSent: params.redirect_uri !== undefined, state: params.state, codeChallenge: params.code_challenge, scope: OAUTH.scope, resource: resourceOf(apiUrl) };
  }

  /** What the consent page shows: who asks, where the answer goes (its host, as the MCP specification asks), for what. */
  async describe(params: AuthorizationParams): Promise<ConsentView> {
    const request = await this.validated(params);
    const redirect = new URL(request.redirectUri);
    const { asset } = this.ctx.chain;
    return {
      client: { id: request.client.id, name: request.client.name, uri: request.client.clientUri },
      redirectUri: request.redirectUri,
      redirectHost: redirect.host,
      loopback: isLoopbackHost(redirect.hostname),
      scope: request.scope,
      resource: request.resource,
      asset: { network: asset.network, asset: asset.address, symbol: asset.symbol, decimals: asset.decimals },
    };
  }

  /** Denied: the client hears `access_denied` (with its state); nothing is recorded. */
  async deny(params: AuthorizationParams): Promise<{ redirectTo: string }> {
    const request = await this.validated(params);
    return { redirectTo: this.errorRedirect({ redirectUri: request.redirectUri, state: request.state }, 'access_denied', 'The user denied the request') };
  }

  /**
   * Approved: the grant of (user, client, wallet, ceiling) and its code. The order: the request again (it came back
   * from the browser), then the management credential (it proves the wallet is the user's to give: wallets belong
   * to the management credential that made them), then the wallet, then the wallet credential the grant pays
   * under (created before the grant so the grant never names a missing one; released if the grant is not written).
   */
  async approve(userId: string, params: AuthorizationParams, input: { walletId: string; managementCredential: string; ceiling: string }): Promise<{ redirectTo: string }> {
    const request = await this.validated(params);
    const owner = await this.ctx.auth.authenticate(`Bearer ${input.managementCredential}`, ['mgmt']).catch((error: unknown) => {
      if (error instanceof ApiError && error.status === 401) throw consentErrors.managementCredentialRefused();
      throw error;
    });
    const { wallets } = this.ctx.services;
    const wallet = await wallets.get(owner.credentialId, input.walletId);
    if (wallet.status !== 'active') throw consentErrors.walletNotActive(wallet.status);
    const credential = await wallets.createCredential(owner.credentialId, wallet.id, { name: `OAuth: ${request.client.name}`.slice(0, 100) });
    const code = this.ctx.hasher.issueToken();
    const { asset } = this.ctx.chain;
    try {
      await this.store.insertGrantWithCode(
        {
          id: newId(),
          clientId: request.client.id,
          userId,
          walletId: wallet.id,
          walletOwnerId: owner.credentialId,
          walletCredentialId: credential.id,
          network: asset.network,
          asset: asset.address,
          ceiling: input.ceiling,
          scope: request.scope,
          resource: request.resource,
        },
        { codeHash: code.hash, redirectUri: request.redirectUriSent ? request.redirectUri : null, codeChallenge: request.codeChallenge },
        OAUTH.codeSeconds,
      );
    } catch (error) {
      await wallets.revokeCredential(owner.credentialId, wallet.id, credential.id).catch(() => undefined);
      throw error;
    }
    const url = new URL(request.redirectUri);
    url.searchParams.set('code', code.token);
    if (request.state !== undefined) url.searchParams.set('state', request.state);
    url.searchParams.set('iss', issuerOf(this.ctx.urls.api));
    return { redirectTo: url.href };
  }

  /** RFC 6749 §4.1.2.1: the error to the proven redirect URI, with the state as sent and our issuer (RFC 9207). */
  errorRedirect(to: { redirectUri: string; state?: string }, error: string, description: string): string {
    const url = new URL(to.redirectUri);
    url.searchParams.set('error', error);
    url.searchParams.set('error_description', description);
    if (to.state !== undefined) url.searchParams.set('state', to.state);
    url.searchParams.set('iss', issuerOf(this.ctx.urls.api));
    return url.href;
  }

  /** The request as the dashboard's routes see it: any problem is said to the user (the page does not redirect errors). */
  private async validated(params: AuthorizationParams): Promise<ValidRequest> {
    try {
      return await this.validate(params);
    } catch (error) {
      if (error instanceof AuthorizationRequestError) throw consentErrors.invalidAuthorizationRequest(error.error, error.description);
      throw error;
    }
  }
}
