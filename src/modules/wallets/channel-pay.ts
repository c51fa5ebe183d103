import { encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types';
import {
  buildChannelConfig,
  computeChannelId,
  createBatchSettlementEIP3009DepositPayload,
  parseAnnouncedMinDeposit,
  processCorrectivePaymentRequired,
  recoverChannel,
  signVoucher,
  updateChannelFromSettle,
  type BatchSettlementClientDeps,
} from '@x402/evm/batch-settlement/client';
import type { LocalAccount } from 'viem/accounts';
import type { AppContext } from '../../context.js';
import { ApiError, conflict } from '../../platform/http/errors.js';
import { newId } from '../../platform/ids.js';
import type { SafeResponse } from '../../platform/safe-fetch.js';
import { parseSettlement, SellerAnswerError } from '../../x402/seller-answers.js';
import { parseChallenge } from './challenge.js';
import { ChannelStore, voucherNonce, type ChannelRow } from './channel-store.js';
import type { PayAndCallInput, PaymentView, UpstreamView } from './pay-schemas.js';
import type { ApprovalView } from './policy-schemas.js';
import { pendingPaymentRow } from './signing.js';
import type { CredentialCeiling, SpendGuard } from './spend-guard.js';
import { WalletsStore, type PaymentRow } from './store.js';
import { upstreamError, upstreamView } from './upstream.js';
import { paymentView } from './views.js';

/** The salt of every channel our wallets open (the official client's default): one channel per wallet and seller. */
export const CHANNEL_SALT = `0x${'00'.repeat(32)}` as const;
/** How often a call waiting for a channel another call holds asks again. */
const LEASE_POLL_MS = 25;

export interface ChannelPayInput {
  walletId: string;
  credentialId: string;
  signer: LocalAccount;
  challenge: PaymentRequired;
  requirement: PaymentRequirements;
  input: PayAndCallInput;
  paymentId: string;
  /** The resource (origin and path) the payment is recorded for, and the URL that receives the signature. */
  resource: string;
  paidUrl: string;
  ceiling?: CredentialCeiling;
  /** The request that asked (its X-Request-Id): with the payment's row and its log line. */
  requestId?: string;
  /** Deposit exactly this (open, top-up); otherwise only what this call needs, within maxPayment. */
  deposit?: bigint;
  /** The paid retry: the same request with these extra headers, never redirected. */
  send(headers: Record<string, string>): Promise<SafeResponse>;
}

export type ChannelPayResult = { upstream: UpstreamView; payment: PaymentView; channel: ChannelRow } | { approval: ApprovalView };

/**
 * Pays a `batch-settlement` requirement from the wallet's channel with the seller, through the official @x402/evm
 * client's parts (its channel config and id, its deposit and voucher signatures, its handling of the seller's receipt
 * and of a corrective 402) over our ClientChannelStorage (channel-store.ts). The order, and why:
 *   1. the channel's lease: the voucher's base is read only by its holder, so no two calls sign on one base;
 *   2. the voucher's payment row is reserved under the spend policy at the requirement's amount (the maximum), its
 *      nonce the channel and cumulative amount (unique per wallet: the same cumulative is never recorded twice);
 *   3. `signed_max` is raised before signing, so the most the seller could claim is known even if we die now;
 *   4. signed (with a deposit when the channel lacks the balance, or when asked) and sent once;
 *   5. the seller's receipt moves the client's state (charged cumulative, balance) and books the payment at what it
 *      charged; a corrective 402 (our base was stale: an answer lost before a restart) resyncs the state from the
 *      seller's copy of our own signature, and the call is signed once more on the right base.
 */
export class ChannelPayments {
  private readonly channels: ChannelStore;
  private readonly store: WalletsStore;

  constructor(
    private readonly ctx: AppContext,
    private readonly guard: SpendGuard,
  ) {
    this.channels = new ChannelStore(ctx.db);
    this.store = new WalletsStore(ctx.db);
  }

  async pay(args: ChannelPayInput): Promise<ChannelPayResult> {
    const deps0 = { signer: clientSigner(this.ctx, args.signer), salt: CHANNEL_SALT };
    const config = await withChecks(() => buildChannelConfig({ ...deps0, storage: undefined as never }, args.requirement));
    const channelId = computeChannelId(config, args.requirement.network).toLowerCase();
    const now = this.ctx.clock.now();
    const row = await this.channels.ensure({
      id: newId(),
      walletId: args.walletId,
      channelId,
      network: args.requirement.network,
      asset: args.requirement.asset,
      payee: config.receiver,
      receiverAuthorizer: config.receiverAuthorizer,
      withdrawDelay: config.withdrawDelay,
      salt: config.salt,
      url: args.paidUrl,
      createdAt: now,
      updatedAt: now,
    });
    const leaseId = newId();
    await this.lease(row.id, leaseId);
    try {
      const deps: BatchSettlementClientDeps = { ...deps0, storage: this.channels.storage(row.id, leaseId, () => this.ctx.clock.now()) };
      let result = await this.once(args, deps, row.id, leaseId, channelId, args.paymentId);
      // A corrective 402 resynced the base: the call is paid once more, on the base the seller showed.
      if (result.kind === 'resynced') result = await this.once(args, deps, row.id, leaseId, channelId, newId());
      if (result.kind === 'resynced') throw new ApiError(502, 'payment_failed', 'The seller refused the voucher twice after resyncing the channel', { payment: result.payment });
      if (result.kind === 'approval') return { approval: result.approval };
      return { upstream: result.upstream, payment: result.payment, channel: (await this.channels.get(row.id))! };
    } finally {
      await this.channels.release(row.id, leaseId);
    }
  }

  /** Waits for the channel's lease: at most as long as one lease lasts (a dead holder's lapses by then). */
  async lease(id: string, leaseId: string): Promise<ChannelRow> {
    const seconds = leaseSeconds(this.ctx);
    const deadline = Date.now() + seconds * 1000;
    for (;;) {
      const row = await this.channels.acquire(id, leaseId, seconds);
      if (row) return row;
      if (Date.now() > deadline) throw conflict('Another call is using this channel; try again', 'channel_busy', { reason: 'channel_busy' });
      await new Promise((resolve) => setTimeout(resolve, LEASE_POLL_MS));
    }
  }

  private async once(
    args: ChannelPayInput,
    deps: BatchSettlementClientDeps,
    rowId: string,
    leaseId: string,
    channelId: string,
    paymentId: string,
  ): Promise<
    | { kind: 'paid'; upstream: UpstreamView; payment: PaymentView }
    | { kind: 'resynced'; payment: PaymentView }
    | { kind: 'approval'; approval: ApprovalView }
  > {
    const { requirement, input } = args;
    // The client's state: our row, or (none yet, or dropped by a refund) the chain's.
    const state = (await deps.storage.get(channelId)) ?? (await withChecks(() => recoverChannel(deps, requirement)));
    // Never below what the seller already confirmed to us (a state recovered from the chain counts only claims).
    const stored = BigInt(state.chargedCumulativeAmount ?? '0');
    const confirmed = await this.channels.highestSettled(args.walletId, channelId);
    const base = confirmed > stored ? confirmed : stored;
    if (confirmed > stored) await deps.storage.set(channelId, { ...state, chargedCumulativeAmount: confirmed.toString() });
    const balance = BigInt(state.balance ?? '0');
    const amount = BigInt(requirement.amount);
    const cumulative = base + amount;
    const deposit = depositFor(args, requirement, cumulative, balance);

    // One cumulative amount, one row. An open row of this amount is a voucher whose answer was lost: set aside, still
    // open; the seller's base decides it (settleBelow after a success, or after a corrective 402).
    const nonce = voucherNonce(channelId, cumulative);
    const earlier = await this.channels.voucherPayment(args.walletId, nonce);
    if (earlier) await this.channels.setVoucherAside(earlier.id, nonce, this.ctx.clock.now());
    const row: PaymentRow = {
      ...pendingPaymentRow(
        { id: paymentId, walletId: args.walletId, credentialId: args.credentialId, method: input.method, resource: args.resource, requestId: args.requestId, now: this.ctx.clock.now() },
        { x402Version: args.challenge.x402Version, nonce, validBefore: '0' },
        requirement,
      ),
      validBefore: null,
    };
    const reservation = await this.guard.reserve({ row, url: input.url, paidUrl: args.paidUrl, approvalId: input.approvalId, ceiling: args.ceiling });
    if (reservation.kind === 'approval') return { kind: 'approval', approval: reservation.approval };
    if (!(await this.channels.raiseSignedMax(rowId, leaseId, cumulative, this.ctx.clock.now()))) {
      await this.store.failPayment(row.id, 'signing_failed: the channel lease lapsed before signing', this.ctx.clock.now());
      throw conflict('The channel lease lapsed before signing; nothing was signed. Try again', 'channel_busy', { reason: 'channel_busy' });
    }

    let payload: PaymentPayload;
    try {
      payload = await this.sign(args, deps, cumulative, deposit);
    } catch (error) {
      await this.store.failPayment(row.id, `signing_failed: ${error instanceof Error ? error.message : String(error)}`, this.ctx.clock.now());
      throw new ApiError(502, 'signing_failed', `x402 signing failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    this.ctx.log.info({ reqId: args.requestId, paymentId: row.id, walletId: args.walletId, channelId, cumulative: cumulative.toString(), deposit: deposit?.toString() }, 'pay-and-call sending a batch-settlement voucher');

    let paid: SafeResponse;
    try {
      paid = await args.send({ 'payment-signature': encodePaymentSignatureHeader(payload) });
    } catch (error) {
      // Lost: the seller may hold it. The row stays open (counted), the channel's close decides it.
      const recorded = await this.store.recordAnswer(row.id, { upstreamStatus: null, settlement: null, next: 'unknown', error: `paid retry failed: ${error instanceof Error ? error.message : String(error)}` }, this.ctx.clock.now());
      throw upstreamError(error, { payment: paymentView(recorded) });
    }
    const upstream = upstreamView(paid);
    let settlement: Record<string, unknown> | null = null;
    try {
      settlement = parseSettlement((name) => paid.headers[name]);
    } catch (error) {
      if (!(error instanceof SellerAnswerError)) throw error;
    }

    if (paid.status !== 402 && settlement?.success === true) {
      const extra = (settlement.extra ?? {}) as { chargedAmount?: unknown; channelState?: { chargedCumulativeAmount?: unknown } };
      const charged = typeof extra.chargedAmount === 'string' ? extra.chargedAmount : undefined;
      const serverCumulative = typeof extra.channelState?.chargedCumulativeAmount === 'string' ? extra.channelState.chargedCumulativeAmount : undefined;
      await this.store.recordAnswer(row.id, { upstreamStatus: paid.status, settlement, next: 'pending', error: null }, this.ctx.clock.now());
      try {
        await updateChannelFromSettle(deps.storage, {
          server: { chargedAmount: charged, chargedCumulativeAmount: serverCumulative },
          local: { channelId: channelId as `0x${string}`, requestAmount: requirement.amount, depositAmount: deposit?.toString() },
        });
      } catch (error) {
        const recorded = await this.store.recordAnswer(row.id, { upstreamStatus: paid.status, settlement, next: 'unknown', error: `unusable receipt: ${String(error)}` }, this.ctx.clock.now());
        return { kind: 'paid', upstream, payment: paymentView(recorded) };
      }
      const after = await this.channels.get(rowId);
      const booked = charged !== undefined ? BigInt(charged) : amount;
      if (after && BigInt(after.chargedCumulative) === base + booked) {
        // The seller holds the voucher and counted it: booked at what it charged (at most the amount reserved).
        const transaction = deposit !== undefined && typeof settlement.transaction === 'string' && settlement.transaction !== '' ? settlement.transaction : null;
        const settled = await this.store.settlePayment(row.id, transaction, this.ctx.clock.now(), booked);
        await this.decideOpen(args.walletId, channelId, base, cumulative, row.id);
        return { kind: 'paid', upstream, payment: paymentView(settled ?? (await this.store.payment(row.id))!) };
      }
      const recorded = await this.store.recordAnswer(row.id, { upstreamStatus: paid.status, settlement, next: 'unknown', error: "the seller's cumulative amount disagrees with the voucher; the channel's close decides it" }, this.ctx.clock.now());
      return { kind: 'paid', upstream, payment: paymentView(recorded) };
    }

    if (paid.status === 402) {
      let corrective: PaymentRequired | undefined;
      try {
        corrective = parseChallenge(paid);
      } catch {
        corrective = undefined;
      }
      if (corrective && (await withChecks(() => processCorrectivePaymentRequired(deps, corrective)).catch(() => false))) {
        // The seller did not take this voucher (another base): what it holds is our earlier, higher-or-equal one.
        const failed = await this.store.failPayment(row.id, `not honoured: the seller answered ${corrective.error ?? 'a corrective 402'} and the channel was resynced`, this.ctx.clock.now());
        const charged = BigInt((await this.channels.get(rowId))?.chargedCumulative ?? '0');
        await this.decideOpen(args.walletId, channelId, charged, charged, row.id);
        return { kind: 'resynced', payment: paymentView(failed ?? (await this.store.payment(row.id))!) };
      }
    }
    const reason = (settlement?.errorReason as string | undefined) ?? (paid.status === 402 ? 'payment rejected by the upstream' : 'no PAYMENT-RESPONSE from the upstream');
    const recorded = await this.store.recordAnswer(row.id, { upstreamStatus: paid.status, settlement, next: 'unknown', error: `upstream refused the payment: ${reason.slice(0, 300)}` }, this.ctx.clock.now());
    if (paid.status === 402) {
      throw new ApiError(502, 'payment_failed', `The upstream did not accept the voucher: ${reason}. The seller can claim at most the channel's signedMax; closing the channel settles it`, { upstream, payment: paymentView(recorded) });
    }
    return { kind: 'paid', upstream, payment: paymentView(recorded) };
  }

  /**
   * What the seller's base tells about the channel's other open vouchers (answers lost earlier): at or below `base`
   * (the seller confirmed it, or showed it with our own signature) they were charged; above it and up to `upTo` (the
   * seller took the voucher `upTo` on that base) they never were. Those above `upTo` stay open for a later answer or the close.
   */
  private async decideOpen(walletId: string, channelId: string, base: bigint, upTo: bigint, except: string): Promise<void> {
    const now = this.ctx.clock.now();
    for (const voucher of await this.channels.openVouchers(walletId, channelId)) {
      if (voucher.id === except) continue;
      const cumulative = cumulativeOf(voucher.nonce);
      if (cumulative <= base) await this.store.settlePayment(voucher.id, null, now);
      else if (cumulative <= upTo) await this.store.failPayment(voucher.id, `not honoured: the seller charged ${base} before the voucher of ${upTo}`, now);
    }
  }

  private async sign(args: ChannelPayInput, deps: BatchSettlementClientDeps, cumulative: bigint, deposit: bigint | undefined): Promise<PaymentPayload> {
    const { requirement, challenge } = args;
    const config = buildChannelConfig(deps, requirement);
    const channelId = computeChannelId(config, requirement.network);
    const partial =
      deposit !== undefined
        ? await createBatchSettlementEIP3009DepositPayload(deps.signer, challenge.x402Version, requirement, config, deposit.toString(), cumulative.toString())
        : { x402Version: challenge.x402Version, payload: { type: 'voucher', channelConfig: config, voucher: await signVoucher(deps.signer, channelId, cumulative.toString(), requirement.network) } };
    return { x402Version: partial.x402Version, payload: partial.payload as unknown as Record<string, unknown>, accepted: requirement, ...(challenge.resource ? { resource: challenge.resource } : {}) };
  }
}

/** The cumulative amount of a voucher payment's nonce (`<channelId>:<cumulative>`). */
export const cumulativeOf = (nonce: string) => BigInt(nonce.split(':')[1] ?? '0');

/** A lease outlives one paid call (both requests at PAY_AND_CALL_TIMEOUT_MS) with room to record the answer. */
export const leaseSeconds = (ctx: AppContext) => Math.ceil((2 * ctx.config.payAndCall.timeoutMs) / 1000) + 30;

/** The official client's signer: our wallet's key, and the chain for its channel reads. */
export function clientSigner(ctx: AppContext, account: LocalAccount) {
  const client = ctx.chain.publicClient;
  return { address: account.address, signTypedData: (m: never) => account.signTypedData(m), readContract: client.readContract.bind(client) } as unknown as BatchSettlementClientDeps['signer'];
}

/**
 * What to deposit with this voucher. Asked (open, top-up): exactly that, and it must cover the voucher. Otherwise
 * only when the channel cannot cover the voucher: the seller's announced minimum deposit, at most maxPayment (the
 * call's cap bounds what one pay-and-call locks), at least what the voucher needs; 409 when maxPayment cannot cover it.
 */
function depositFor(args: ChannelPayInput, requirement: PaymentRequirements, cumulative: bigint, balance: bigint): bigint | undefined {
  const needed = cumulative > balance ? cumulative - balance : 0n;
  if (args.deposit !== undefined) {
    if (args.deposit < needed) throw new ApiError(400, 'invalid_request', `The deposit must cover this call's voucher: at least ${needed}`, { reason: 'deposit_too_small', needed: needed.toString() });
    return args.deposit;
  }
  if (needed === 0n) return undefined;
  const cap = BigInt(args.input.maxPayment.amount);
  if (needed > cap) {
    throw conflict(`The channel holds ${balance} and this call needs a deposit of ${needed}, more than maxPayment; top the channel up first; nothing was signed`, 'channel_deposit_required', {
      reason: 'channel_deposit_required',
      needed: needed.toString(),
    });
  }
  const announced = parseAnnouncedMinDeposit(requirement.extra?.minDeposit, BigInt(requirement.amount)) ?? needed;
  const target = announced > cap ? cap : announced;
  return target > needed ? target : needed;
}

/** The official client's own refusals of a requirement (no receiverAuthorizer, ...) are the upstream's bad offer. */
async function withChecks<T>(run: () => T | Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw new ApiError(502, 'invalid_challenge', `The batch-settlement requirement cannot be paid: ${error instanceof Error ? error.message : String(error)}`);
  }
}
