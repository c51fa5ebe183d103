import type { AppContext } from '../../context.js';
import { isoDate } from '../../platform/http/schemas.js';
import { UUID_PATTERN } from '../../platform/ids.js';
import { consentErrors } from './errors.js';
import type { GrantView } from './schemas.js';
import type { ClientRow, GrantRow, OAuthStore } from './store.js';

/** How many grants Connected apps lists (newest first). */
const GRANTS_PAGE = 100;

/**
 * A user's grants, as Connected apps shows them: each with what its wallet credential has paid against the ceiling.
 * A grant is active only while its row is and its wallet credential is live: the wallet's owner may revoke that
 * credential among the wallet's, and the grant then says so.
 */
export class OAuthGrants {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: OAuthStore,
  ) {}

  async list(userId: string): Promise<GrantView[]> {
    const rows = await this.store.grantsOf(userId, GRANTS_PAGE);
    return Promise.all(rows.map(({ grant, client }) => this.view(grant, client)));
  }

  /**
   * Revokes the user's grant: the grant row first (every token check reads it, so from this commit on no node
   * accepts its tokens), then its wallet credential (so the wallet's owner sees it revoked too). Revoking a revoked
   * grant answers it as it is; another user's grant is not found.
   */
  async revoke(userId: string, grantId: string): Promise<GrantView> {
    if (!UUID_PATTERN.test(grantId)) throw consentErrors.grantNotFound();
    const grant = (await this.store.revokeGrant(grantId, 'user', userId)) ?? (await this.store.grant(grantId));
    if (!grant || grant.userId !== userId) throw consentErrors.grantNotFound();
    await this.ctx.services.wallets.revokeCredential(grant.walletOwnerId, grant.walletId, grant.walletCredentialId).catch((error: unknown) => {
      this.ctx.log.warn({ grantId, err: error }, 'OAuth grant revoked, but its wallet credential could not be revoked');
    });
    const client = await this.store.client(grant.clientId);
    return this.view(grant, client!);
  }

  private async view(grant: GrantRow, client: ClientRow): Promise<GrantView> {
    const { wallets, walletPolicies } = this.ctx.services;
    const [wallet, live, ceiling] = await Promise.all([
      wallets.walletOf(grant.walletId),
      grant.status === 'active' ? wallets.credentialLive(grant.walletId, grant.walletCredentialId) : Promise.resolve(false),
      walletPolicies.ceiling(grant.walletId, grant.walletCredentialId, { network: grant.network, asset: grant.asset, amount: grant.ceiling }),
    ]);
    const revokedReason = grant.status === 'revoked' ? ((grant.revokedReason ?? 'user') as GrantView['revokedReason']) : live ? null : 'wallet_credential_revoked';
    return {
      id: grant.id,
      status: live ? 'active' : 'revoked',
      revokedReason,
      client: { id: client.id, name: client.name, uri: client.clientUri, redirectHosts: [...new Set(client.redirectUris.map((uri) => new URL(uri).host))] },
      wallet: { id: wallet.id, name: wallet.name, address: wallet.address },
      walletCredentialId: grant.walletCredentialId,
      ceiling,
      scope: grant.scope,
      createdAt: grant.createdAt.toISOString(),
      lastUsedAt: isoDate(grant.lastUsedAt),
      revokedAt: isoDate(grant.revokedAt),
    };
  }
}
