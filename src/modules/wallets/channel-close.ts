import { refundChannel, type BatchSettlementClientDeps } from '@x402/evm/batch-settlement/client';
import type { Hex } from 'viem';
import type { AppContext } from '../../context.js';
import { ApiError, conflict } from '../../platform/http/errors.js';
import { newId } from '../../platform/ids.js';
import { readChannel, type ChannelState } from '../../x402/facilitator/batch/chain.js';
import { ChannelPayments, clientSigner, cumulativeOf } from './channel-pay.js';
import { ChannelStore, type ChannelRow } from './channel-store.js';
import type { SafeFetch } from './pay-and-call.js';
import { signerOrRefuse, type WalletProvider } from './provider.js';
import type { SpendGuard } from './spend-guard.js';
import { WalletsStore, type WalletRow } from './store.js';

export interface ChannelClosed {
  channel: ChannelRow;
  chain: ChannelState;
  /** What came back to the wallet (atomic units), and the seller's refund transaction. */
  refunded: string;
  transaction: string | null;
}

/**
 * POST /v1/wallets/me/channels/{id}/close: the seller's cooperative refund, the protocol's client path (the official
 * client's refundChannel: a zero-charge `refund` voucher at the cumulative amount the seller charged, sent to the
 * resource the channel was opened at; the seller's facilitator claims what was charged and returns the rest in one
 * transaction). Under the channel's lease, so no voucher is signed while it closes. Then the chain decides the
 * channel's vouchers: those at or below what the seller claimed are settled, any above it failed (never claimed, and
 * the channel no longer holds what they named).
 */
export class ChannelClose {
  private readonly channels: ChannelStore;
  private readonly store: WalletsStore;
  private readonly payments: ChannelPayments;

  constructor(
    private readonly ctx: AppContext,
    private readonly provider: WalletProvider,
    private readonly fetch: SafeFetch,
    guard: SpendGuard,
  ) {
    this.channels = new ChannelStore(ctx.db);
    this.store = new WalletsStore(ctx.db);
    this.payments = new ChannelPayments(ctx, guard);
  }

  async run(wallet: WalletRow, channel: ChannelRow): Promise<ChannelClosed> {
    if (wallet.status !== 'active' || !wallet.keyRef) throw conflict(`The wallet is ${wallet.status}; only an active wallet can close a channel`, 'wallet_not_active', { status: wallet.status });
    if (channel.status === 'closed') throw conflict('The channel is closed already; nothing was sent', 'channel_closed', { reason: 'channel_closed' });
    const leaseId = newId();
    await this.payments.lease(channel.id, leaseId);
    try {
      const signer = await signerOrRefuse(this.provider, { id: wallet.id, keyRef: wallet.keyRef }, this.ctx.log, 'Signing failed: the wallet key is unavailable; nothing was sent');
      const deps: BatchSettlementClientDeps = {
        signer: clientSigner(this.ctx, signer),
        salt: channel.salt as Hex,
        storage: this.channels.storage(channel.id, leaseId, () => this.ctx.clock.now()),
      };
      const before = await readChannel(this.ctx.chain.publicClient, channel.channelId as Hex);
      const charged = BigInt((await this.channels.get(channel.id))?.chargedCumulative ?? '0');
      let transaction: string | null = null;
      // Nothing left above what the seller charged: there is nothing to refund, the channel is only marked closed.
      if (before.balance > charged && before.balance > before.totalClaimed) {
        try {
          const settled = await refundChannel(deps, channel.url, { fetch: this.fetchAdapter() });
          transaction = settled.transaction || null;
        } catch (error) {
          throw new ApiError(502, 'refund_failed', `The seller did not refund the channel: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}. Nothing changed on our side; try again later`);
        }
      }
      const after = await readChannel(this.ctx.chain.publicClient, channel.channelId as Hex);
      await this.channels.closed(channel.id, leaseId, after, this.ctx.clock.now());
      await this.decideVouchers(wallet.id, channel.channelId, after.totalClaimed);
      const refunded = before.balance > after.balance ? before.balance - after.balance : 0n;
      return { channel: (await this.channels.get(channel.id))!, chain: after, refunded: refunded.toString(), transaction };
    } finally {
      await this.channels.release(channel.id, leaseId);
    }
  }

  /** Open vouchers against what the seller claimed for good: at or below it they were paid, above it never. */
  private async decideVouchers(walletId: string, channelId: string, claimed: bigint): Promise<void> {
    const now = this.ctx.clock.now();
    for (const voucher of await this.channels.openVouchers(walletId, channelId)) {
      if (cumulativeOf(voucher.nonce) <= claimed) await this.store.settlePayment(voucher.id, null, now);
      else await this.store.failPayment(voucher.id, `not claimed: the channel was closed with ${claimed} claimed, below this voucher`, now);
    }
  }

  /** The official client's fetch, through pay-and-call's SSRF guard, never redirected (the voucher goes to the seller only). */
  private fetchAdapter(): typeof fetch {
    const timeoutMs = this.ctx.config.payAndCall.timeoutMs;
    return (async (url: string, init?: { method?: string; headers?: Record<string, string> }) => {
      const response = await this.fetch(String(url), { method: 'GET', headers: init?.headers ?? {}, timeoutMs, maxRedirects: 0 });
      return { status: response.status, headers: { get: (name: string) => response.headers[name.toLowerCase()] ?? null } };
    }) as unknown as typeof fetch;
  }
}
