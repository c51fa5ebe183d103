import { createHash } from 'node:crypto';
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types';
import type { AppContext } from '../../context.js';
import { crashPoint } from '../../platform/crash-points.js';
import { newId, UUID_PATTERN } from '../../platform/ids.js';
import type { Caller } from '../../platform/request-context.js';
import { eip3009PayloadSchema } from '../../x402/payload.js';
import { PaymentHeaderError } from '../../x402/server/errors.js';
import type { SettleOutcome } from '../../x402/server/payment-steps.js';
import { storageErrors } from './errors.js';
import { inspectImage } from './image.js';
import type { ImageStore } from './image-store.js';
import { STORAGE_LIMITS, type OrderView } from './schemas.js';
import { settlementRecordOf } from './reconcile.js';
import type { KeyedOrder, OrderRow, PendingPayment, StorageStore } from './store.js';
import { orderView, paymentUrlOf } from './views.js';

export interface UploadRequest {
  idempotencyKey: string | null;
  orderId: string | null;
  file: { bytes: Buffer; declaredType: string | null };
  /** PAYMENT-SIGNATURE, else X-PAYMENT. */
  paymentHeader: string | null;
  /** The request that asked: its id goes to the facilitator, its route labels the settle's gas. */
  caller?: Caller;
}

/** What the route sends: the 402 challenge (not an envelope) or the order, with their headers. */
export type UploadAnswer =
  | { status: 402; body: PaymentRequired; headers: Record<string, string> }
  | { status: 200; order: OrderView; headers: Record<string, string> };

const NO_STORE = { 'cache-control': 'no-store' };
const NONCE_ALREADY_USED = 'invalid_exact_evm_nonce_already_used';

export interface UploadDeps {
  ctx: AppContext;
  store: StorageStore;
  images: ImageStore;
  payTo: string;
  /** Whether the image store and the facilitator can take an upload now (cached by the caller). */
  available: () => Promise<boolean>;
}

/** The key is stored only as its keyed hash: a leaked table cannot be used to read or redeem orders. */
export function keyHashOf(ctx: AppContext, key: string | null): string {
  return ctx.hasher.hash(keySecretOf(key));
}

/** The order the key names, under whichever pepper hashed it (a rotation: docs/operations.md#key-rotation). */
export async function orderOfKey(ctx: AppContext, store: StorageStore, key: string | null): Promise<KeyedOrder | undefined> {
  return (await ctx.keyRotation.find(keySecretOf(key), (hash) => store.byKeyHash(hash))) ?? undefined;
}

function keySecretOf(key: string | null): string {
  if (!key || !UUID_PATTERN.test(key.trim())) throw storageErrors.invalidKey();
  return `ipfs-upload:${key.trim().toLowerCase()}`;
}

/**
 * The public upload endpoint's logic. Order matters: cheap refusals first (key, order binding, the
 * image's hash against the key's), the image decoded only for a new order, then the payment — one
 * conditional UPDATE that lets a single request spend, then settle — and only after the money moved,
 * storage. A paid order never asks for money again.
 *
 * Unlike intents there is no separate verify before the claim: the facilitator's settle verifies before
 * it sends anything, and a payment it refuses releases the order at once (402 with the reason), so a
 * verify would repeat that work (a fifth of an upload's CPU, bench/RESULTS.md). Only the key's holder can
 * claim its order, so a bad payment can hold nothing but its own order, for one settle call.
 */
export class UploadService {
  constructor(private readonly deps: UploadDeps) {}

  async upload(request: UploadRequest): Promise<UploadAnswer> {
    const keyHash = keyHashOf(this.deps.ctx, request.idempotencyKey);
    const { bytes, declaredType } = request.file;
    if (bytes.length === 0) throw storageErrors.invalidFile('The file is empty');
    const sha256 = createHash('sha256').update(bytes).digest('hex');

    let order = await orderOfKey(this.deps.ctx, this.deps.store, request.idempotencyKey);
    if (request.orderId !== null && order?.id !== request.orderId) throw storageErrors.orderNotFound();
    if (!order) order = await this.createOrder(keyHash, sha256, bytes, declaredType);
    if (order.fileSha256 !== sha256) throw storageErrors.changedFile();
    return this.continueOrder(order, bytes, request.paymentHeader, order.quoteOpen, request.caller);
  }

  private async createOrder(keyHash: string, sha256: string, bytes: Buffer, declaredType: string | null): Promise<KeyedOrder> {
    await this.requireAvailable();
    const image = await inspectImage(bytes, declaredType);
    if ('reason' in image) {
      throw image.status === 400 ? storageErrors.invalidFile(image.message) : storageErrors.unsupportedImage(image.reason, image.message);
    }
    const asset = this.deps.ctx.x402.asset;
    const { row } = await this.deps.store.createOrFind(
      {
        id: newId(),
        keyHash,
        fileSha256: sha256,
        fileBytes: bytes.length,
        mediaType: image.mediaType,
        amount: STORAGE_LIMITS.priceAtomic,
        network: asset.network,
        asset: asset.address,
        payTo: this.deps.payTo,
        retentionDays: STORAGE_LIMITS.retentionDays,
      },
      STORAGE_LIMITS.quoteLifetimeSeconds,
    );
    return row;
  }

  /** `quoteOpen` is the database's word on the quote, read with the order (false for a re-read: it is not awaiting payment then). */
  private async continueOrder(order: OrderRow, bytes: Buffer, paymentHeader: string | null, quoteOpen = false, caller?: Caller): Promise<UploadAnswer> {
    switch (order.status) {
      case 'fulfilled':
        // Past retention (the sweep has not moved it yet) it is expired, not served.
        if (order.expiresAt && order.expiresAt <= this.deps.ctx.clock.now()) throw storageErrors.retentionEnded();
        return this.answer(order);
      case 'expired':
        throw storageErrors.retentionEnded();
      case 'paid':
        return this.store(order, bytes);
      case 'payment_pending':
        throw storageErrors.paymentPending();
      case 'awaiting_payment':
        return this.pay(order, bytes, paymentHeader, quoteOpen, caller);
    }
  }

  private async pay(order: OrderRow, bytes: Buffer, paymentHeader: string | null, quoteOpen: boolean, caller: Caller | undefined): Promise<UploadAnswer> {
    await this.requireAvailable();
    if (!paymentHeader) {
      if (!quoteOpen) throw storageErrors.quoteExpired(order.quoteExpiresAt);
      return this.challenge(order);
    }
    const payload = this.decode(paymentHeader);
    // The payment is bound to this order: a signature made for another order's challenge cannot pay this one.
    if (payload.resource?.url !== this.paymentUrl(order)) {
      throw storageErrors.invalidPayment(`The payment must keep the challenge's resource URL (${this.paymentUrl(order)})`);
    }
    const parsed = eip3009PayloadSchema.safeParse(payload.payload);
    if (!parsed.success) throw storageErrors.invalidPayment('The payment is not an exact EVM (EIP-3009) authorization');
    if (!quoteOpen) throw storageErrors.quoteExpired(order.quoteExpiresAt);
    const paymentRequired = this.paymentRequired(order);
    const requirements = this.deps.ctx.x402.match(paymentRequired, payload);
    if (!requirements) return this.challenge(order, 'No matching payment requirements');


    const { authorization } = parsed.data;
    const payment: PendingPayment = { payer: authorization.from.toLowerCase(), nonce: authorization.nonce.toLowerCase(), validBefore: authorization.validBefore };
    const claim = await this.deps.store.claim(order.id, payment);
    if (claim === 'authorization_taken') throw storageErrors.authorizationUsed();
    if (claim === 'quote_expired') throw storageErrors.quoteExpired(order.quoteExpiresAt);
    if (claim === 'not_awaiting') return this.afterLostClaim(order, bytes);
    crashPoint('storage.after-claim');
    return this.settle(order, payment, payload, requirements, bytes, caller);
  }

  private async settle(order: OrderRow, payment: PendingPayment, payload: PaymentPayload, requirements: PaymentRequirements, bytes: Buffer, caller: Caller | undefined): Promise<UploadAnswer> {
    const x402 = this.deps.ctx.x402;
    let outcome: SettleOutcome;
    try {
      outcome = await x402.settle(payload, requirements, settlementRecordOf(order.id, payment.nonce), caller);
      crashPoint('storage.after-settle');
    } catch (error) {
      // An exception after the claim says nothing about what reached the chain.
      this.deps.ctx.log.error({ err: error, orderId: order.id }, 'upload settle threw; the order stays payment_pending for reconciliation');
      outcome = { kind: 'unknown', transaction: null, message: String(error) };
    }
    switch (outcome.kind) {
      case 'settled': {
        const paid = await this.deps.store.markPaid(order.id, payment, outcome.transaction);
        return this.store(paid ?? (await this.current(order.id)), bytes, x402.encodePaymentResponse(outcome.response));
      }
      case 'failed':
        await this.deps.store.release(order.id, payment);
        // The facilitator says success once: an authorization it settled before paid something else.
        if (outcome.reason === NONCE_ALREADY_USED) throw storageErrors.authorizationUsed();
        return this.challenge(await this.current(order.id), outcome.reason);
      case 'unavailable':
        await this.deps.store.release(order.id, payment);
        throw storageErrors.unavailable('Payment settlement is temporarily unavailable; retry');
      case 'unknown':
        // Money may have moved: the order stays payment_pending until reconcile (by the caller with
        // the transaction hash, or the worker from the chain) confirms or releases it.
        throw storageErrors.paymentPending(outcome.transaction);
    }
  }

  /** Stores the image of a paid order and fulfils it; a storage failure leaves it paid (502, retry is free). */
  private async store(order: OrderRow, bytes: Buffer, paymentResponse?: string): Promise<UploadAnswer> {
    let cid: string;
    try {
      ({ cid } = await this.deps.images.put(bytes));
    } catch (error) {
      this.deps.ctx.log.warn({ err: error, orderId: order.id }, 'image storage failed; the order stays paid');
      throw storageErrors.storageFailed(paymentResponse);
    }
    // A concurrent redeem may have fulfilled it first: same bytes, same CID, either row is the answer.
    const current = (await this.deps.store.fulfil(order.id, cid)) ?? (await this.current(order.id));
    if (current.status !== 'fulfilled') throw storageErrors.paymentPending();
    return this.answer(current, paymentResponse);
  }

  /** Another request moved the order first (a concurrent copy of this payment, or another payment). */
  private async afterLostClaim(order: OrderRow, bytes: Buffer): Promise<UploadAnswer> {
    const current = await this.current(order.id);
    if (current.status === 'awaiting_payment') throw storageErrors.paymentPending();
    return this.continueOrder(current, bytes, null);
  }

  private challenge(order: OrderRow, error?: string): UploadAnswer {
    const paymentRequired = this.paymentRequired(order, error);
    return { status: 402, body: paymentRequired, headers: { ...NO_STORE, 'payment-required': this.deps.ctx.x402.encodePaymentRequired(paymentRequired) } };
  }

  private paymentRequired(order: OrderRow, error?: string): PaymentRequired {
    return this.deps.ctx.x402.paymentRequired(
      {
        url: this.paymentUrl(order),
        description: `IPFS storage of one image for ${order.retentionDays} days`,
        mimeType: 'application/json',
        amount: order.amount,
        payTo: order.payTo,
      },
      error,
    );
  }

  private answer(order: OrderRow, paymentResponse?: string): UploadAnswer {
    const headers: Record<string, string> = { ...NO_STORE };
    if (paymentResponse) Object.assign(headers, { 'payment-response': paymentResponse, 'x-payment-response': paymentResponse });
    return { status: 200, order: orderView(order, this.deps.ctx.urls, this.deps.ctx.clock.now()), headers };
  }

  private decode(header: string): PaymentPayload {
    try {
      return this.deps.ctx.x402.decodePayment(header);
    } catch (error) {
      if (error instanceof PaymentHeaderError) throw storageErrors.invalidPayment('The payment header is malformed: expected a base64 x402 v2 payment payload');
      throw error;
    }
  }

  /** Taking a payment needs the store and the facilitator; redeeming a paid order needs only the store (its own 502). */
  private async requireAvailable(): Promise<void> {
    if (!(await this.deps.available())) throw storageErrors.unavailable();
  }

  private paymentUrl(order: OrderRow): string {
    return paymentUrlOf(this.deps.ctx.urls.api, order.id);
  }

  private async current(id: string): Promise<OrderRow> {
    const row = await this.deps.store.byId(id);
    if (!row) throw new Error(`upload order ${id} vanished`);
    return row;
  }
}
