import { createHash } from 'node:crypto';
import type { AppContext } from '../../context.js';
import type { PrincipalOf } from '../../platform/auth/principal.js';
import { createUsageToucher } from '../../platform/auth/touch.js';
import { newId } from '../../platform/ids.js';
import type { OAuthClients } from './clients.js';
import { oauthErrors } from './errors.js';
import { isOurResource } from './metadata.js';
import { OAUTH } from './settings.js';
import type { ClientRow, GrantRow, OAuthStore, RevokedReason } from './store.js';

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** RFC 7636 §4.1: 43 to 128 characters of the unreserved set. */
const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** Thrown inside a transaction whose conditional UPDATE matched nothing: rolls it back, then the caller looks why. */
class Lost extends Error {}

/**
 * The token endpoint (RFC 6749 §3.2) and the check of access tokens at /mcp. Tokens are opaque: 32 random bytes
 * behind a family prefix, stored as keyed hashes. Every use of an access token reads its row and its grant (and the
 * wallet credential the grant pays under), so a revocation is refused by every node from the next request on; a
 * signed token (JWT) would have needed that same read, and added a key to keep.
 */
export class OAuthTokens {
  private readonly touch: (id: string, now?: Date) => void;

  constructor(
    private readonly ctx: AppContext,
    private readonly store: OAuthStore,
    private readonly clients: OAuthClients,
  ) {
    this.touch = createUsageToucher((id, now) => this.store.touchGrant(id, now));
  }

  /** POST /oauth/token: the client first (its authentication), then the grant type's own checks. */
  async exchange(form: Record<string, string>, authorization: string | undefined): Promise<TokenResponse> {
    const client = await this.clients.authenticate(form, authorization);
    if (form.resource !== undefined && !isOurResource(form.resource, this.ctx.urls.api)) throw oauthErrors.invalidTarget('resource names no resource of this server');
    switch (form.grant_type) {
      case 'authorization_code':
        return this.fromCode(client, form);
      case 'refresh_token':
        return this.fromRefresh(client, form);
      case undefined:
        throw oauthErrors.invalidRequest('grant_type is missing');
      default:
        throw oauthErrors.unsupportedGrantType(form.grant_type);
    }
  }

  /**
   * authorization_code: the code must be this client's, unused, unexpired, for the same redirect URI, and answer the
   * PKCE challenge; all checked before the code is used, so a wrong verifier does not burn it. Then one conditional
   * UPDATE uses it and the tokens are written in the same transaction. A code that comes back used revokes its
   * grant (RFC 6749 §4.1.2): one of the two presenters stole it, and we cannot tell which.
   */
  private async fromCode(client: ClientRow, form: Record<string, string>): Promise<TokenResponse> {
    if (!form.code) throw oauthErrors.invalidRequest('code is missing');
    if (form.code_verifier === undefined) throw oauthErrors.invalidRequest('code_verifier is missing: PKCE is required');
    if (!CODE_VERIFIER.test(form.code_verifier)) throw oauthErrors.invalidRequest('code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~');
    const codeHash = this.ctx.hasher.hash(form.code);
    const found = await this.store.codeWithGrant(codeHash);
    if (!found || found.grant.clientId !== client.id) throw oauthErrors.invalidGrant('The authorization code is unknown, or was issued to another client');
    if (found.code.usedAt) throw await this.reused(found.grant, 'code_reused');
    if (found.expired) throw oauthErrors.invalidGrant('The authorization code has expired: authorize again');
    if (found.code.redirectUri !== null && form.redirect_uri !== found.code.redirectUri) throw oauthErrors.invalidGrant('redirect_uri differs from the authorization request');
    if (s256(form.code_verifier) !== found.code.codeChallenge) throw oauthErrors.invalidGrant('code_verifier does not match the code_challenge');
    if (found.grant.status !== 'active') throw oauthErrors.invalidGrant('The grant was revoked: authorize again');

    try {
      return await this.ctx.db.transaction(async (tx) => {
        if (!(await this.store.useCode(tx, codeHash))) throw new Lost();
        return this.issue(tx, found.grant);
      });
    } catch (error) {
      if (!(error instanceof Lost)) throw error;
      const again = await this.store.codeWithGrant(codeHash);
      if (again?.code.usedAt) throw await this.reused(found.grant, 'code_reused');
      throw oauthErrors.invalidGrant('The authorization code has expired: authorize again');
    }
  }

  /**
   * refresh_token: rotated on every use (OAuth 2.1 §4.3.1): the token presented is used up and a new pair issued,
   * in one transaction. One presented again after its rotation means two holders: the grant is revoked, so the
   * thief's copy and the client's both stop, and the user authorizes again.
   */
  private async fromRefresh(client: ClientRow, form: Record<string, string>): Promise<TokenResponse> {
    if (!form.refresh_token) throw oauthErrors.invalidRequest('refresh_token is missing');
    const found = await this.ctx.keyRotation.find(form.refresh_token, (hash) => this.store.refreshWithGrant(hash));
    if (!found || found.grant.clientId !== client.id) throw oauthErrors.invalidGrant('The refresh token is unknown, or was issued to another client');
    if (found.token.usedAt) throw await this.reused(found.grant, 'refresh_token_reused');
    if (found.expired) throw oauthErrors.invalidGrant('The refresh token has expired: authorize again');
    if (found.grant.status !== 'active') throw oauthErrors.invalidGrant('The grant was revoked: authorize again');
    if (form.scope !== undefined && form.scope.split(' ').some((s) => s !== '' && s !== found.grant.scope && !OAUTH.ignoredScopes.includes(s))) {
      throw oauthErrors.invalidScope(`The grant's scope is ${found.grant.scope}; a refresh cannot widen it`);
    }

    try {
      return await this.ctx.db.transaction(async (tx) => {
        if (!(await this.store.useRefresh(tx, found.token.id))) throw new Lost();
        return this.issue(tx, found.grant);
      });
    } catch (error) {
      if (!(error instanceof Lost)) throw error;
      const again = await this.store.refreshWithGrant(found.token.tokenHash);
      if (again?.token.usedAt) throw await this.reused(found.grant, 'refresh_token_reused');
      throw oauthErrors.invalidGrant('The refresh token has expired: authorize again');
    }
  }

  private async issue(tx: Parameters<OAuthStore['insertTokens']>[0], grant: GrantRow): Promise<TokenResponse> {
    const access = this.ctx.hasher.issue('oauthAccess');
    const refresh = this.ctx.hasher.issue('oauthRefresh');
    await this.store.insertTokens(tx, grant.id, [
      { id: newId(), kind: 'access', tokenHash: access.hash, seconds: OAUTH.accessTokenSeconds },
      { id: newId(), kind: 'refresh', tokenHash: refresh.hash, seconds: OAUTH.refreshTokenSeconds },
    ]);
    return { access_token: access.secret, token_type: 'Bearer', expires_in: OAUTH.accessTokenSeconds, refresh_token: refresh.secret, scope: grant.scope };
  }

  /** Revokes the grant a reused code or refresh token belongs to (and its wallet credential); the refusal to answer. */
  private async reused(grant: GrantRow, reason: RevokedReason) {
    const revoked = await this.store.revokeGrant(grant.id, reason);
    if (revoked) {
      this.ctx.log.warn({ grantId: grant.id, clientId: grant.clientId, reason }, 'OAuth grant revoked: a used code or refresh token was presented again');
      await this.ctx.services.wallets.revokeCredential(grant.walletOwnerId, grant.walletId, grant.walletCredentialId).catch(() => undefined);
    }
    const what = reason === 'code_reused' ? 'authorization code' : 'refresh token';
    return oauthErrors.invalidGrant(`This ${what} was already used. A used one presented again means a copy of it is elsewhere, so the grant is revoked: authorize again`);
  }

  /**
   * The resolver of `svc_oauth_at_` tokens (kind `oauth`, accepted by /mcp only): a live token of an active grant
   * whose wallet credential is live too (the wallet's owner may have revoked that credential among the wallet's).
   */
  resolve = async (tokenHash: string): Promise<PrincipalOf<'oauth'> | null> => {
    const grant = await this.store.grantOfAccessToken(tokenHash);
    if (!grant) return null;
    if (!(await this.ctx.services.wallets.credentialLive(grant.walletId, grant.walletCredentialId))) return null;
    this.touch(grant.id, this.ctx.clock.now());
    return {
      kind: 'oauth',
      walletId: grant.walletId,
      credentialId: grant.walletCredentialId,
      grantId: grant.id,
      clientId: grant.clientId,
      ceiling: { network: grant.network, asset: grant.asset, amount: grant.ceiling },
    };
  };
}

/** PKCE S256 (RFC 7636 §4.2): BASE64URL(SHA-256(ASCII(code_verifier))). */
export const s256 = (verifier: string) => createHash('sha256').update(verifier, 'ascii').digest('base64url');
