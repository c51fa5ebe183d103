import { decodePaymentResponseHeader } from '@x402/core/http';
import type { AppContext } from '../../context.js';
import { ApiError, conflict } from '../../platform/http/errors.js';
import { newId } from '../../platform/ids.js';
import type { SafeFetchOptions, SafeResponse } from '../../platform/safe-fetch.js';
import { chooseRequirement, parseChallenge } from './challenge.js';
import { forwardedRequest, resourceOf } from './forward.js';
import type { PayAndCallInput, PaymentView, UpstreamView } from './pay-schemas.js';
import type { WalletProvider } from './provider.js';
import { signPayment } from './signing.js';
import { WalletsStore, type PaymentRow, type WalletRow } from './store.js';
import { upstreamError, upstreamView } from './upstream.js';
import { paymentView } from './views.js';

export type SafeFetch = (url: string, options?: SafeFetchOptions) => Promise<SafeResponse>;

export interface PayAndCallResult {
  upstream: UpstreamView;
  payment: PaymentView | null;
}

/**
 * POST /v1/wallets/me/pay-and-call: call the upstream once; on an x402 v2 challenge that matches
 * maxPayment, sign with the wallet's key, record the payment, retry with PAYMENT-SIGNATURE.
 */
export class PayAndCall {
  private readonly store: WalletsStore;

  constructor(
    private readonly ctx: AppContext,
    private readonly provider: WalletProvider,
    private readonly fetch: SafeFetch,
  ) {
    this.store = new WalletsStore(ctx.db);
  }

  async run(wallet: WalletRow, credentialId: string, input: PayAndCallInput): Promise<PayAndCallResult> {
    if (wallet.status !== 'active' || !wallet.keyRef) {
      throw conflict(`The wallet is ${wallet.status}; only an active wallet can pay`, 'wallet_not_active', { status: wallet.status });
    }
    const { maxBodyBytes, timeoutMs } = this.ctx.config.payAndCall;
    const request = forwardedRequest(input.headers, input.body, maxBodyBytes);
    const send = (url: string, headers: Record<string, string>, options: SafeFetchOptions = {}) =>
      this.fetch(url, { method: input.method, headers, body: request.body, timeoutMs, ...options });

    const first = await send(input.url, request.headers).catch((error: unknown) => {
      throw upstreamError(error);
    });
    if (first.status !== 402) return { upstream: upstreamView(first), payment: null };

    const challenge = withUpstream(() => parseChallenge(first), first);
    const requirement = chooseRequirement(challenge, input.maxPayment);
    const signer = await this.provider.signer(wallet.id, wallet.keyRef).catch((error: unknown) => {
      this.ctx.log.error({ walletId: wallet.id, err: error }, 'wallet key unavailable');
      throw new ApiError(502, 'signing_failed', 'x402 signing failed: the wallet key is unavailable');
    });
    const signed = await signPayment(signer, challenge, requirement, input.maxPayment.amount);

    // Stored before it leaves the process, so every signature that reaches an upstream has a row.
    const now = this.ctx.clock.now();
    const row: PaymentRow = {
      id: newId(),
      walletId: wallet.id,
      credentialId,
      status: 'pending',
      x402Version: signed.payload.x402Version,
      scheme: requirement.scheme,
      network: requirement.network,
      asset: requirement.asset,
      amount: requirement.amount,
      payTo: requirement.payTo,
      nonce: signed.nonce,
      method: input.method,
      resource: resourceOf(first.url),
      upstreamStatus: null,
      transaction: null,
      settlement: null,
      error: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.store.insertPayment(row);

    let paid: SafeResponse;
    try {
      // To the URL that issued the challenge (after any redirects), and never redirected again: the
      // signature must reach the resource that asked for it, nowhere else.
      paid = await send(first.url, { ...request.headers, 'payment-signature': signed.header }, { maxRedirects: 0 });
    } catch (error) {
      const payment = await this.finish(row.id, { status: 'unknown', error: `paid retry failed: ${error instanceof Error ? error.message : String(error)}` });
      throw upstreamError(error, { payment });
    }

    const upstream = upstreamView(paid);
    const settlement = readSettlement(paid);
    if (settlement?.success === true) {
      const transaction = typeof settlement.transaction === 'string' && settlement.transaction ? settlement.transaction : null;
      return { upstream, payment: await this.finish(row.id, { status: 'settled', transaction, settlement, upstreamStatus: paid.status }) };
    }
    if (paid.status === 402 || settlement?.success === false) {
      const reason = (settlement?.errorReason as string | undefined) ?? rejectionReason(paid) ?? 'payment rejected by the upstream';
      const payment = await this.finish(row.id, { status: 'failed', settlement, error: reason, upstreamStatus: paid.status });
      throw new ApiError(502, 'payment_failed', `The upstream did not accept the payment: ${reason}`, { upstream, payment });
    }
    // Answered without a settlement receipt: the resource came, the settlement is not proven.
    return { upstream, payment: await this.finish(row.id, { status: 'unknown', error: 'no PAYMENT-RESPONSE from the upstream', upstreamStatus: paid.status }) };
  }

  private async finish(id: string, changes: Parameters<WalletsStore['updatePayment']>[1]): Promise<PaymentView> {
    return paymentView(await this.store.updatePayment(id, changes, this.ctx.clock.now()));
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

function readSettlement(response: SafeResponse): Record<string, unknown> | null {
  const header = response.headers['payment-response'] ?? response.headers['x-payment-response'];
  if (!header) return null;
  try {
    const decoded = decodePaymentResponseHeader(header.trim()) as unknown;
    return decoded && typeof decoded === 'object' && !Array.isArray(decoded) ? (decoded as Record<string, unknown>) : null;
  } catch {
    return null;
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
