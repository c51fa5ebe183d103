import { erc20Abi, type Address } from 'viem';
import type { AppContext } from '../../context.js';
import type { PrincipalOf } from '../../platform/auth/principal.js';
import { createUsageToucher } from '../../platform/auth/touch.js';
import { ApiError, badRequest, conflict, notFound } from '../../platform/http/errors.js';
import { newId, UUID_PATTERN } from '../../platform/ids.js';
import { isUniqueViolation } from '../../platform/db-errors.js';
import { ATTEMPT_LEASE_MS, type Provisioner } from './provisioner.js';
import type { WalletProvider } from './provider.js';
import { SUPPORTED_CHAIN_TYPES, type CreatedCredentialView, type CreateWalletInput, type CredentialView, type WalletView } from './schemas.js';
import { WalletsStore, type CredentialRow, type WalletRow } from './store.js';
import { credentialView, paymentView, walletView } from './views.js';
import type { PaymentView } from './pay-schemas.js';

export interface CreateWalletResult {
  created: boolean;
  wallet: WalletView;
  credential: CreatedCredentialView | null;
}

/** A balance of one asset, in atomic units (`decimals` places). */
export interface WalletBalance {
  network: string;
  asset: string;
  symbol: string;
  decimals: number;
  amount: string;
}

const FIRST_CREDENTIAL_NAME = 'default';

/**
 * Wallets and their credentials. The application boundary is the management credential: each one
 * sees, and is idempotent over, only the wallets it created; anything else is "not found".
 */
export class WalletsService {
  private readonly store: WalletsStore;
  private readonly touch: (id: string, now?: Date) => void;
  private readonly activeWallets = new Map<string, WalletRow>();

  constructor(
    private readonly ctx: AppContext,
    private readonly provider: WalletProvider,
    private readonly provisioner: Provisioner,
  ) {
    this.store = new WalletsStore(ctx.db);
    this.touch = createUsageToucher((id, now) => this.store.touchCredential(id, now));
  }

  async list(owner: string): Promise<WalletView[]> {
    return (await this.store.walletsOf(owner)).map(walletView);
  }

  async get(owner: string, walletId: string): Promise<WalletView> {
    return walletView(await this.owned(owner, walletId));
  }

  /** Idempotent by externalId within the application; the first success carries the first credential. */
  async create(owner: string, input: CreateWalletInput): Promise<CreateWalletResult> {
    const existing = await this.store.walletByExternalId(owner, input.externalId);
    if (existing) return this.existingAnswer(existing, input.chainType);
    if (!(SUPPORTED_CHAIN_TYPES as readonly string[]).includes(input.chainType)) {
      throw badRequest(`chainType must be one of: ${SUPPORTED_CHAIN_TYPES.join(', ')}`, undefined, 'unsupported_chain_type');
    }
    const now = this.ctx.clock.now();
    const wallet: WalletRow = {
      id: newId(),
      ownerCredentialId: owner,
      externalId: input.externalId,
      name: input.name,
      provider: this.provider.name,
      chainType: input.chainType,
      status: 'provisioning',
      address: null,
      keyRef: null,
      metadata: input.metadata ?? null,
      lastError: null,
      provisionAttempts: 0,
      // The inline attempt below holds the lease; the worker takes over if this process dies.
      nextAttemptAt: new Date(now.getTime() + ATTEMPT_LEASE_MS),
      createdAt: now,
      updatedAt: now,
    };
    const { row: credential, secret } = this.newCredential(wallet.id, FIRST_CREDENTIAL_NAME, null);
    try {
      await this.ctx.db.transaction(async (tx) => {
        const store = new WalletsStore(tx);
        await store.insertWallet(wallet);
        await store.insertCredential(credential);
      });
    } catch (error) {
      // A concurrent create with the same externalId won: answer as its repeat.
      if (!isUniqueViolation(error, 'wallets_owner_external_unique')) throw error;
      const winner = await this.store.walletByExternalId(owner, input.externalId);
      if (!winner) throw error;
      return this.existingAnswer(winner, input.chainType);
    }
    const provisioned = await this.provisioner.attempt(wallet);
    return { created: true, wallet: walletView(provisioned), credential: { ...credentialView(credential), secret } };
  }

  async listCredentials(owner: string, walletId: string): Promise<CredentialView[]> {
    const wallet = await this.owned(owner, walletId);
    return (await this.store.credentialsOf(wallet.id)).map(credentialView);
  }

  async createCredential(owner: string, walletId: string, input: { name: string; expiresAt?: string }): Promise<CreatedCredentialView> {
    const wallet = await this.owned(owner, walletId);
    if (wallet.status !== 'active') {
      throw conflict(`A credential can only be created for an active wallet (this one is ${wallet.status})`, 'wallet_not_active', { status: wallet.status });
    }
    const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
    if (expiresAt && expiresAt.getTime() <= this.ctx.clock.now().getTime()) {
      throw badRequest('expiresAt must be in the future', [{ in: 'body', path: '/expiresAt', message: 'must be in the future' }]);
    }
    const { row, secret } = this.newCredential(wallet.id, input.name, expiresAt);
    await this.store.insertCredential(row);
    return { ...credentialView(row), secret };
  }

  async revokeCredential(owner: string, walletId: string, credentialId: string): Promise<CredentialView> {
    const wallet = await this.owned(owner, walletId);
    const row = UUID_PATTERN.test(credentialId) ? await this.store.revokeCredential(wallet.id, credentialId, this.ctx.clock.now()) : undefined;
    if (!row) throw notFound('Credential not found', 'credential_not_found');
    return credentialView(row);
  }

  async me(walletId: string): Promise<WalletView> {
    return walletView(await this.walletOf(walletId));
  }

  /**
   * The wallet's balance of the chain's asset (USDG) as the chain reads it now, in atomic units; null while the
   * wallet has no address yet (provisioning or failed).
   */
  async balance(walletId: string): Promise<WalletBalance | null> {
    const wallet = await this.payingWallet(walletId);
    if (!wallet.address) return null;
    const { asset, publicClient } = this.ctx.chain;
    const amount = await publicClient.readContract({ address: asset.address, abi: erc20Abi, functionName: 'balanceOf', args: [wallet.address as Address] });
    return { network: asset.network, asset: asset.address, symbol: asset.symbol, decimals: asset.decimals, amount: amount.toString() };
  }

  /** Payments of the wallet, newest first, older than the `before` payment id when given. */
  async payments(walletId: string, limit: number, before?: string): Promise<PaymentView[]> {
    return (await this.store.paymentsOf(walletId, limit, before)).map(paymentView);
  }

  /** The wallet's payments among these ids (other modules: an agent's turns), newest first. */
  async paymentsByIds(walletId: string, ids: string[]): Promise<PaymentView[]> {
    return (await this.store.paymentsByIds(walletId, ids)).map(paymentView);
  }

  /** One payment of the wallet; null when it has none by that id (nothing was signed under it). */
  async payment(walletId: string, paymentId: string): Promise<PaymentView | null> {
    const row = await this.store.payment(paymentId);
    return row && row.walletId === walletId ? paymentView(row) : null;
  }

  /** The wallet behind a wallet credential (the guard already proved the credential live). */
  async walletOf(walletId: string): Promise<WalletRow> {
    const row = await this.store.wallet(walletId);
    if (!row) throw notFound('Wallet not found', 'wallet_not_found');
    if (row.status === 'active') this.remember(row);
    return row;
  }

  /**
   * For paying: an active wallet never changes its address or key, so it is served from memory
   * after the first read (one query less on the hot path); any other state is read fresh.
   */
  async payingWallet(walletId: string): Promise<WalletRow> {
    return this.activeWallets.get(walletId) ?? this.walletOf(walletId);
  }

  /** Credential resolver for `svc_wallet_` secrets: revoked or expired ones resolve to nothing (401). */
  resolveCredential = async (secretHash: string): Promise<PrincipalOf<'wallet'> | null> => {
    const now = this.ctx.clock.now();
    const row = await this.store.liveCredentialByHash(secretHash, now);
    if (!row) return null;
    this.touch(row.id, now);
    return { kind: 'wallet', walletId: row.walletId, credentialId: row.id };
  };

  /** Whether a credential of the wallet is live (active, not expired): an OAuth grant pays under one (src/modules/oauth). */
  async credentialLive(walletId: string, credentialId: string): Promise<boolean> {
    const row = UUID_PATTERN.test(credentialId) ? await this.store.credential(walletId, credentialId) : undefined;
    return !!row && row.status === 'active' && (!row.expiresAt || row.expiresAt.getTime() > this.ctx.clock.now().getTime());
  }

  /** Operator action: provision a failed wallet again now. */
  retryProvisioning = async (walletId: string) => UUID_PATTERN.test(walletId) && (await this.store.retryNow(walletId, this.ctx.clock.now()));

  private existingAnswer(existing: WalletRow, chainType: string): CreateWalletResult {
    if (existing.chainType !== chainType) {
      throw new ApiError(409, 'external_id_conflict', `externalId is already used by a wallet with chainType ${existing.chainType}`, { walletId: existing.id, chainType: existing.chainType });
    }
    return { created: false, wallet: walletView(existing), credential: null };
  }

  private newCredential(walletId: string, name: string, expiresAt: Date | null): { row: CredentialRow; secret: string } {
    const issued = this.ctx.hasher.issue('wallet');
    const row: CredentialRow = {
      id: newId(),
      walletId,
      name,
      prefix: issued.prefix,
      secretHash: issued.hash,
      status: 'active',
      lastUsedAt: null,
      expiresAt,
      createdAt: this.ctx.clock.now(),
      revokedAt: null,
    };
    return { row, secret: issued.secret };
  }

  private remember(row: WalletRow): void {
    if (this.activeWallets.size >= 10_000) this.activeWallets.delete(this.activeWallets.keys().next().value!);
    this.activeWallets.set(row.id, row);
  }

  private async owned(owner: string, walletId: string): Promise<WalletRow> {
    const row = UUID_PATTERN.test(walletId) ? await this.store.ownedWallet(owner, walletId) : undefined;
    if (!row) throw notFound('Wallet not found', 'wallet_not_found');
    return row;
  }
}
