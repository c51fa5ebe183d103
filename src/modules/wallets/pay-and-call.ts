import { getAddress } from 'viem';
import type { AppContext } from '../../context.js';
import { ApiError, conflict } from '../../platform/http/errors.js';
import { crashPoint } from '../../platform/crash-points.js';
import { newId } from '../../platform/ids.js';
import { currentRequestId } from '../../platform/request-context.js';
import type { SafeFetchOptions, SafeResponse } from '../../platform/safe-fetch.js';
import { chooseRequirement, parseChallenge } from './challenge.js';
import { forwardedRequest, resourceOf } from './forward.js';
import type { PayAndCallInput, PaymentView, UpstreamView } from './pay-schemas.js';
import type { WalletProvider } from './provider.js';
import { parseSettlement, SellerAnswerError } from '../../x402/seller-answers.js';
import type { PaymentReconciler } from './reconcile.js';
import { authorizationValidity, pendingPaymentRow, signPayment, type SignedPayment } from './signing.js';
import type { ApprovalView } from './policy-schemas.js';
import type { SpendGuard } from './spend-guard.js';
import { planAuthorization } from '../../x402/short-lived-scheme.js';
import { WalletsStore, type WalletRow } from './store.js';
import { upstreamError, upstreamView } from './upstream.js';
import { payAndCallOutcomes, type PayAndCallOutcomes } from './metrics.js';
import { paymentView } from './views.js';

export type SafeFetch = (url: string, options?: SafeFetchOptions) => Promise<SafeResponse>;

export type PayAndCallResult =
  | { upstream: UpstreamView; payment: PaymentView | null }
  /** The wallet's policy wants a human to approve this payment first: nothing was signed (answered 202). */
  | { approval: ApprovalView };

/**
 * POST /v1/wallets/me/pay-and-call: call the upstream once; on an x402 v2 challenge whose every
 * requirement matches maxPayment, reserve the payment under the wallet's spend policy (recorded before it
 * is signed), sign with the wallet's key, retry with PAYMENT-SIGNATURE. The upstream's receipt is recorded as what it said; the payment is `settled`
 * only when the chain shows the transfer (reconcile.ts, here at once and then by the worker).
 */
export class PayAndCall {
  private readonly store: WalletsStore;
  private readonly outcomes: PayAndCallOutcomes;

  constructor(
    private readonly ctx: AppContext,
    private readonly provider: WalletProvider,
    private readonly fetch: SafeFetch,
    private readonly reconciler: PaymentReconciler,
    private readonly guard: SpendGuard,
  ) {
    this.store = new WalletsStore(ctx.db);
    this.outcomes = payAndCallOutcomes(ctx.metrics);
  }

  async run(wallet: WalletRow, credentialId: string, input: PayAndCallInput, paymentId: string = newId()): Promise<PayAndCallResult> {
    try {
      const result = await this.attempt(wallet, credentialId, input, paymentId);
      this.outcomes.answered(result);
      return result;
    } catch (error) {
      this.outcomes.failed(error);
      throw error;
    }
  }

  private async attempt(wallet: WalletRow, credentialId: string, input: PayAndCallInput, paymentId: string): Promise<PayAndCallResult> {
    if (wallet.status !== 'active' || !wallet.keyRef) {
      throw conflict(`The wallet is ${wallet.status}; only an active wallet can pay`, 'wallet_not_active', { status: wallet.status });
    }
    const { maxBodyBytes, timeoutMs } = this.ctx.config.payAndCall;
    const request = forwardedRequest(input.headers, input.body, maxBodyBytes);
    // The id of the request that asked (the caller's own X-Request-Id when it sent one) goes upstream on
    // both requests, and is in the log line of the payment: one id across our logs and the seller's.
    const requestId = currentRequestId();
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
    const requirement = chooseRequirement(challenge, input.maxPayment);

    // Reserved before it is signed: the policy's check and the payment's row are one transaction, and the
    // row names the exact nonce and validity the signature will carry (spend-guard.ts).
    const validity = authorizationValidity(this.ctx);
    const planned = await planAuthorization(validity, requirement);
    const row = pendingPaymentRow(
      { id: paymentId, walletId: wallet.id, credentialId, method: input.method, resource: resourceOf(first.url), now: this.ctx.clock.now() },
      { x402Version: challenge.x402Version, nonce: planned.nonce, validBefore: planned.validBefore.toString() },
      requirement,
    );
    const reservation = await this.guard.reserve({ row, url: input.url, paidUrl: first.url, approvalId: input.approvalId });
    if (reservation.kind === 'approval') return { approval: reservation.approval };
    crashPoint('pay-and-call.after-reserve');

    let signed: SignedPayment;
    try {
      const signer = await this.provider.signer(wallet.id, wallet.keyRef).catch((error: unknown) => {
        this.ctx.log.error({ walletId: wallet.id, err: error }, 'wallet key unavailable');
        throw new ApiError(502, 'signing_failed', 'x402 signing failed: the wallet key is unavailable');
      });
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
    this.ctx.log.info({ paymentId: row.id, walletId: wallet.id, resource: row.resource, amount: requirement.amount, network: requirement.network }, 'pay-and-call sending a signed payment');

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
