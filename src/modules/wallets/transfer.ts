import { getAddress } from 'viem';
import type { AppContext } from '../../context.js';
import { conflict } from '../../platform/http/errors.js';
import { newId } from '../../platform/ids.js';
import { isUniqueViolation } from '../../platform/db-errors.js';
import type { Caller } from '../../platform/request-context.js';
import type { WalletProvider } from './provider.js';
import type { PaymentReconciler } from './reconcile.js';
import type { PaymentView } from './pay-schemas.js';
import { authorizationValidity, pendingPaymentRow, signPayment } from './signing.js';
import { WalletsStore, type WalletRow } from './store.js';
import { paymentView } from './views.js';

export interface TransferInput {
  to: string;
  /** Atomic units of the chain's asset. */
  amount: string;
}

/**
 * Sends the chain's asset from a wallet to an address: an EIP-3009 authorization the facilitator submits, so
 * the wallet needs no gas. It is a wallet payment like pay-and-call's (recorded before it is signed, method
 * TRANSFER, resource `transfer:<to>`), so the payments reconciler settles or fails it from the chain whatever
 * happens to this request: an unknown outcome stays open until the chain says.
 */
export class WalletTransfer {
  private readonly store: WalletsStore;

  constructor(
    private readonly ctx: AppContext,
    private readonly provider: WalletProvider,
    private readonly reconciler: PaymentReconciler,
  ) {
    this.store = new WalletsStore(ctx.db);
  }

  /**
   * `paymentId` names the payment before it is signed (a caller's idempotency): a second run under the same id
   * signs nothing that can be sent (its row is refused) and answers 409 transfer_in_progress. `caller`: the request that
   * asked (its id is listed with the payment, its route labels the settle's gas).
   */
  async run(wallet: WalletRow, credentialId: string, input: TransferInput, paymentId: string = newId(), caller?: Caller): Promise<PaymentView> {
    if (wallet.status !== 'active' || !wallet.keyRef || !wallet.address) {
      throw conflict(`The wallet is ${wallet.status}; only an active wallet can pay`, 'wallet_not_active', { status: wallet.status });
    }
    const to = getAddress(input.to);
    const challenge = this.ctx.x402.paymentRequired({ url: `${this.ctx.urls.api}/v1/wallets/${wallet.id}`, description: `Transfer to ${to}`, mimeType: 'application/json', amount: input.amount, payTo: to });
    const requirement = challenge.accepts[0]!;
    const signed = await signPayment(await this.provider.signer(wallet.id, wallet.keyRef), challenge, requirement, input.amount, authorizationValidity(this.ctx));
    const id = paymentId;
    const pending = pendingPaymentRow({ id, walletId: wallet.id, credentialId, method: 'TRANSFER', resource: `transfer:${to}`, requestId: caller?.requestId, now: this.ctx.clock.now() }, { ...signed, x402Version: signed.payload.x402Version }, requirement);
    await this.store.insertPayment(pending).catch((error: unknown) => {
      if (isUniqueViolation(error, 'wallet_payments_pkey')) throw conflict('This transfer is already being sent; ask again for its outcome', 'transfer_in_progress', { reason: 'transfer_in_progress' });
      throw error;
    });
    const outcome = await this.ctx.x402.settle(signed.payload, requirement, `wallet-transfer:${id}:${signed.nonce}`, caller);
    const at = this.ctx.clock.now();
    // Refused, or never sent (the signature stays here, unsent): nothing can move. Else the chain decides.
    if (outcome.kind === 'failed' || outcome.kind === 'unavailable') {
      return paymentView((await this.store.failPayment(id, outcome.kind === 'failed' ? outcome.reason : `facilitator_unavailable: ${outcome.message}`, at))!);
    }
    const settlement = outcome.kind === 'settled' ? (outcome.response as unknown as Record<string, unknown>) : null;
    let row = await this.store.recordAnswer(id, { upstreamStatus: null, settlement, next: outcome.kind === 'settled' ? 'pending' : 'unknown', error: outcome.kind === 'unknown' ? outcome.message : null }, at);
    try {
      row = await this.reconciler.reconcile({ row, payer: getAddress(wallet.address) });
    } catch (error) {
      this.ctx.log.warn({ paymentId: id, err: error }, 'transfer could not read the chain; the reconciler will');
    }
    return paymentView(row);
  }
}
