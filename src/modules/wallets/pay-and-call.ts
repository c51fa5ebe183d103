import { getAddress } from 'viem';
import type { AppContext } from '../../context.js';
import { ApiError, conflict } from '../../platform/http/errors.js';
import { crashPoint } from '../../platform/crash-points.js';
import { newId } from '../../platform/ids.js';
import type { Caller } from '../../platform/request-context.js';
import type { SafeFetchOptions, SafeResponse } from '../../platform/safe-fetch.js';
import { chooseRequirement, parseChallenge } from './challenge.js';
import { ChannelPayments } from './channel-pay.js';
import type { ChannelRow } from './channel-store.js';
import { refuseWithoutPermit2Allowance } from './permit2-allowance.js';
import { forwardedRequest, resourceOf } from './forward.js';
import type { PayAndCallInput, PayAndCallResult, PaymentView } from './pay-schemas.js';
import { signerOrRefuse, type WalletProvider } from './provider.js';
import { parseSettlement, SellerAnswerError } from '../../x402/seller-answers.js';
import type { PaymentReconciler } from './reconcile.js';
import { authorizationValidity, pendingPaymentRow, signPayment, type SignedPayment } from './signing.js';
import type { CredentialCeiling, SpendGuard } from './spend-guard.js';
import { planAuthorization } from '../../x402/short-lived-scheme.js';
import { WalletsStore, type PaymentRow, type WalletRow } from './store.js';
import { upstreamError, upstreamView } from './upstream.js';
import { payAndCallOutcomes, type PayAndCallOutcomes } from './metrics.js';
import { paymentView } from './views.js';

/** How long close() waits for the chain confirmations still running. */
const CLOSE_WAIT_MS = 10_000;

export type SafeFetch = (url: string, options?: SafeFetchOptions) => Promise<SafeResponse>;

/** What a pay-and-call is besides its input; see run(). */
export interface PayAndCallOptions {
  paymentId?: string;
  ceiling?: CredentialCeiling;
  /** Deposit exactly this into the seller's channel (open, top-up). */
  deposit?: bigint;
  /** The request that asked: its id goes upstream as X-Request-Id, with the payment's row and its log line. */
  caller?: Caller;
}


/**
 * POST /v1/wallets/me/pay-and-call: call the upstream once; on an x402 v2 challenge whose every
 * requirement matches maxPayment (`exact` by EIP-3009, or `upto` whose maximum is within it), reserve the payment under the wallet's spend policy (recorded before it
 * is signed), sign with the wallet's key, retry with PAYMENT-SIGNATURE. The upstream's receipt is recorded as what it said; the payment is `settled`
 * only when the chain shows the transfer (reconcile.ts). When the upstream reports success, the answer goes back at once with the
 * payment `pending` (the seller's transaction in `settlement`) and the chain is asked after it (`confirmLater`, then the worker);
 * on any other answer the chain is asked before answering, since only the chain can tell whether a refused payment moved money.
 */
export class PayAndCall {
  private readonly store: WalletsStore;
  private readonly outcomes: PayAndCallOutcomes;
  /** Chain confirmations started after their answer went back, awaited by close(). */
  private readonly confirming = new Set<Promise<void>>();
  private closing = false;
  private readonly channels: ChannelPayments;

  constructor(
    private readonly ctx: AppContext,
    private readonly provider: WalletProvider,
    private readonly fetch: SafeFetch,
    private readonly reconciler: PaymentReconciler,
    private readonly guard: SpendGuard,
  ) {
    this.store = new WalletsStore(ctx.db);
    this.outcomes = payAndCallOutcomes(ctx.metrics);
    this.channels = new ChannelPayments(ctx, guard);
  }

  /**
   * `paymentId`: the caller's (an Idempotency-Key's, an agent hold's): a payment already made under it is never made again.
   * `ceiling`: what the credential may pay in all (an OAuth grant's), checked with the policy before anything is signed.
   */
  async run(wallet: WalletRow, credentialId: string, input: PayAndCallInput, options: PayAndCallOptions = {}): Promise<PayAndCallResult & { channel?: ChannelRow }> {
    const { paymentId, ceiling, deposit } = options;
    try {
      const earlier = paymentId === undefined ? undefined : await this.store.payment(paymentId);
      if (earlier) {
        throw conflict(
          `A call with this key already made payment ${earlier.id} (${earlier.status}); its answer was lost. Read it from GET /v1/wallets/me/payments, and send a new key to pay again`,
          'idempotency_key_used',
          { reason: 'idempotency_key_used', payment: paymentView(earlier) },
        );
      }
      const result = await this.attempt(wallet, credentialId, input, paymentId ?? newId(), ceiling, deposit, options.caller?.requestId);
      this.outcomes.answered(result);
      return result;
    } catch (error) {
      this.outcomes.failed(error);
      throw error;
    }
  }

  private async attempt(wallet: WalletRow, credentialId: string, input: PayAndCallInput, paymentId: string, ceiling: CredentialCeiling | undefined, deposit: bigint | undefined, requestId: string | undefined): Promise<PayAndCallResult & { channel?: ChannelRow }> {
    if (wallet.status !== 'active' || !wallet.keyRef) {
      throw conflict(`The wallet is ${wallet.status}; only an active wallet can pay`, 'wallet_not_active', { status: wallet.status });
    }
    const { maxBodyBytes, timeoutMs } = this.ctx.config.payAndCall;
    const request = forwardedRequest(input.headers, input.body, maxBodyBytes);
    // The id of the request that asked (the caller's own X-Request-Id when it sent one) goes upstream on
    // both requests, and is in the log line of the payment: one id across our logs and the seller's.
    if (requestId !== undefined) request.headers['x-request-id'] = requestId;
    const send = (url: string, headers: Record<string, string>, options: SafeFetchOptions = {}) =>
      this.fetch(url, { method: input.method, headers, body: request.body, timeoutMs, ...options });

    // A host the policy denies is refused before any request reaches it: the URL asked, and each redirect.
    const hostRule = await this.guard.hostRule(wallet.id);
    const first = await send(input.url, request.headers, { beforeHop: hostRule }).catch((error: unknown) => {
      throw upstreamError(error);
    });
    if (first.status !== 402) return { upstream: upstreamView(first), payment: null };

    const challenge = withUpstream(() => parseChallenge(first), first);
    // A deposit (a channel's open or top-up) pays only a batch-settlement requirement.
    const requirement = chooseRequirement(deposit === undefined ? challenge : { ...challenge, accepts: challenge.accepts.filter((r) => r.scheme === 'batch-settlement') }, input.maxPayment);
    if (requirement.scheme === 'batch-settlement') {
      // A voucher on the wallet's channel with this seller (channel-pay.ts): its own reservation, lease and booking.
      const signer = await signerOrRefuse(this.provider, { id: wallet.id, keyRef: wallet.keyRef }, this.ctx.log, 'x402 signing failed: the wallet key is unavailable');
      const send = (headers: Record<string, string>) => this.fetch(first.url, { method: input.method, headers: { ...request.headers, ...headers }, body: request.body, timeoutMs, maxRedirects: 0 });
      const paid = await this.channels.pay({ walletId: wallet.id, credentialId, signer, challenge, requirement, input, paymentId, resource: resourceOf(first.url), paidUrl: first.url, ceiling, deposit, requestId, send });
      // The channel's row goes only to the channel routes (open, top-up), never out of pay-and-call's own answer.
      if ('approval' in paid || deposit !== undefined) return paid;
      return { upstream: paid.upstream, payment: paid.payment };
    }
    // upto: the permit can move nothing unless Permit2 may pull the maximum (checked before a reservation exists).
    if (wallet.address) await refuseWithoutPermit2Allowance(this.ctx.chain.publicClient, this.ctx.chain.network, getAddress(wallet.address), requirement);

    // Reserved before it is signed: the policy's check and the payment's row are one transaction, and the
    // row names the exact nonce and validity the signature will carry (spend-guard.ts). For `upto` the row's
    // amount is the maximum permitted: reserved whole, and booked as what the chain moved (reconcile-upto.ts).
    const validity = authorizationValidity(this.ctx);
    const planned = await planAuthorization(validity, requirement);
    const row = pendingPaymentRow(
      { id: paymentId, walletId: wallet.id, credentialId, method: input.method, resource: resourceOf(first.url), requestId, now: this.ctx.clock.now() },
      { x402Version: challenge.x402Version, nonce: planned.nonce, validBefore: planned.validBefore.toString() },
      requirement,
    );
    const reservation = await this.guard.reserve({ row, url: input.url, paidUrl: first.url, approvalId: input.approvalId, ceiling });
    if (reservation.kind === 'approval') return { approval: reservation.approval };
    crashPoint('pay-and-call.after-reserve');

    let signed: SignedPayment;
    try {
      const signer = await signerOrRefuse(this.provider, { id: wallet.id, keyRef: wallet.keyRef }, this.ctx.log, 'x402 signing failed: the wallet key is unavailable');
      signed = await signPayment(signer, challenge, requirement, input.maxPayment.amount, { ...validity, planned });
      // The row tracks the planned authorization: a signature of any other would go unreconciled.
      if (signed.nonce !== planned.nonce || signed.validBefore !== planned.validBefore.toString()) {
        throw new ApiError(502, 'signing_failed', 'x402 signing failed: the signature does not carry the planned nonce and validity');
      }
    } catch (error) {
      // Nothing left the process: release the reservation at once.
      await this.store.failPayment(row.id, `signing_failed: ${error instanceof Error ? error.message : String(error)}`, this.ctx.clock.now());
      throw error;
    }
    crashPoint('pay-and-call.after-sign');
    // The root logger adds the request's id (reqId) to the line.
    this.ctx.log.info({ reqId: requestId, paymentId: row.id, walletId: wallet.id, resource: row.resource, amount: requirement.amount, network: requirement.network }, 'pay-and-call sending a signed payment');

    let paid: SafeResponse;
    try {
      // To the URL that issued the challenge (after any redirects), and never redirected again: the
      // signature must reach the resource that asked for it, nowhere else.
      paid = await send(first.url, { ...request.headers, 'payment-signature': signed.header }, { maxRedirects: 0 });
    } catch (error) {
      const payment = await this.finish(wallet, row.id, { upstreamStatus: null, settlement: null, next: 'unknown', error: `paid retry failed: ${error instanceof Error ? error.message : String(error)}` });
      throw upstreamError(error, { payment });
    }
    crashPoint('pay-and-call.after-upstream');

    // What the upstream says about the payment. Its receipt passes the JSON guard; an unusable one
    // counts as no receipt (the chain decides), and is never stored.
    const upstream = upstreamView(paid);
    let settlement: Record<string, unknown> | null = null;
    let unusable: string | null = null;
    try {
      settlement = parseSettlement((name) => paid.headers[name]);
    } catch (error) {
      if (!(error instanceof SellerAnswerError)) throw error;
      unusable = error.message;
    }
    const refused = paid.status === 402 || settlement?.success === false;
    const reason = refused ? clip((settlement?.errorReason as string | undefined) || rejectionReason(paid) || 'payment rejected by the upstream') : null;
    if (!refused && settlement?.success === true && typeof settlement.transaction === 'string' && settlement.transaction !== '' && row.scheme === 'exact') {
      // The seller says it settled, naming its transaction: answered now with the payment as recorded (`pending`, the
      // claim in `settlement`), and the chain asked after the answer. A pending payment already counts in the spend
      // policy as an open one, so nothing waits on the chain to keep the accounting right; the chain alone moves it on
      // (confirmLater now, the worker's loop as the backstop).
      const recorded = await this.store.recordAnswer(row.id, { upstreamStatus: paid.status, settlement, next: 'pending', error: null }, this.ctx.clock.now());
      this.confirmLater(wallet, recorded);
      return { upstream, payment: paymentView(recorded) };
    }
    // Anything else (a refusal, no receipt, an unusable one, an `upto` use whose amount only the chain knows): the
    // chain is asked before answering, so a 402 whose transfer did happen still answers with the payment settled.
    const payment =
      settlement?.success === true
        ? await this.finish(wallet, row.id, { upstreamStatus: paid.status, settlement, next: 'pending', error: null })
        : await this.finish(wallet, row.id, {
            upstreamStatus: paid.status,
            settlement,
            next: 'unknown',
            error: reason ? `upstream refused the payment: ${reason}` : unusable ? `unusable receipt: ${clip(unusable)}` : 'no PAYMENT-RESPONSE from the upstream',
          });
    if (refused && payment.status !== 'settled') {
      // Nothing can recall a signature already sent: say how long it stays spendable (it was signed short-lived).
      const spendableUntil = new Date(Number(signed.validBefore) * 1000).toISOString();
      throw new ApiError(502, 'payment_failed', `The upstream did not accept the payment: ${reason}. The signed authorization stays spendable until ${spendableUntil} (its validBefore)`, {
        upstream,
        payment,
        spendableUntil,
      });
    }
    // Answered with the resource: the payment is whatever the chain says (settled, or open until it does).
    return { upstream, payment };
  }

  /**
   * Asks the chain about an answered payment without holding its request: started on the next turn of the event
   * loop (the answer is written first), errors logged, the worker's loop (worker.ts) taking over whatever stays open.
   * Each one is tracked until it ends, so close() can wait for it before the database and the chain close.
   */
  private confirmLater(wallet: WalletRow, row: PaymentRow): void {
    if (this.closing || !wallet.address || !this.reconciler.canCheck(row) || (row.status !== 'pending' && row.status !== 'unknown')) return;
    const payer = getAddress(wallet.address);
    const confirmation = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.reconciler.reconcile({ row, payer }))
      .then(
        () => undefined,
        (error: unknown) => this.ctx.log.warn({ paymentId: row.id, err: error }, 'pay-and-call could not confirm the payment on chain after answering; the reconciler will'),
      );
    this.confirming.add(confirmation);
    void confirmation.finally(() => this.confirming.delete(confirmation));
  }

  /** Chain confirmations started after their answer and still running (the operator's view; close() waits for them). */
  get confirmationsRunning(): number {
    return this.confirming.size;
  }

  /**
   * Stops starting confirmations and waits for those in flight, at most `timeoutMs` (a chain that hangs must not hold
   * the shutdown): one cut short leaves its payment open, and the worker's loop confirms it after the restart.
   */
  async close(timeoutMs = CLOSE_WAIT_MS): Promise<void> {
    this.closing = true;
    if (this.confirming.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const waited = await Promise.race([
      Promise.all([...this.confirming]).then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (!waited) this.ctx.log.warn({ inFlight: this.confirming.size }, 'pay-and-call closed with chain confirmations still running; the reconciler will finish them');
  }

  /** Records the upstream's answer, then asks the chain at once; a chain that cannot be read leaves it to the worker. */
  private async finish(wallet: WalletRow, id: string, answer: Parameters<WalletsStore['recordAnswer']>[1]): Promise<PaymentView> {
    let row = await this.store.recordAnswer(id, answer, this.ctx.clock.now());
    if (wallet.address && this.reconciler.canCheck(row) && (row.status === 'pending' || row.status === 'unknown')) {
      try {
        row = await this.reconciler.reconcile({ row, payer: getAddress(wallet.address) });
      } catch (error) {
        this.ctx.log.warn({ paymentId: id, err: error }, 'pay-and-call could not read the chain; the reconciler will');
      }
    }
    return paymentView(row);
  }
}

/** A challenge we cannot use: the caller also gets the upstream's answer to look at. */
function withUpstream<T>(parse: () => T, response: SafeResponse): T {
  try {
    return parse();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    throw new ApiError(error.status, error.code, error.message, { issues: error.details ?? null, upstream: upstreamView(response) });
  }
}

function rejectionReason(response: SafeResponse): string | undefined {
  try {
    const error = parseChallenge(response).error;
    return error || undefined;
  } catch {
    return undefined;
  }
}

/** Upstream text kept in `error`: short, and never ending in half a surrogate pair. */
function clip(text: string, max = 300): string {
  return text.length <= max ? text : text.slice(0, max).replace(/[\uD800-\uDBFF]$/, '');
}
