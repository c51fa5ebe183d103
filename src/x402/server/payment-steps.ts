// What charge.ts and metered.ts need of the x402 service, and the shapes they share with it: below all three, so
// service.ts can call the flows (chargeOnce, chargeUsage) that take it without their importing service.ts back.
import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import type { FastifyRequest } from 'fastify';
import type { ExpectedPayment } from '../../chain/payment-check.js';
import type { AssetInfo } from '../../chain/registry.js';
import type { Caller } from '../../platform/request-context.js';
import type { CallerFacilitatorClient } from './facilitator-clients.js';

/** A priced resource: what one request to a paid endpoint costs and who is paid. */
export interface PricedResource {
  /** Absolute URL of the resource as the client requested it (see resourceUrl()). */
  url: string;
  description: string;
  mimeType: string;
  /** Atomic units of the asset, e.g. "100" = 0.0001 USDG. */
  amount: string;
  payTo: string;
  /** How long the signed authorization stays valid. Default 300. */
  maxTimeoutSeconds?: number;
  /** Default: the chain's default asset (USDG). */
  asset?: AssetInfo;
}

export type VerifyOutcome =
  | { kind: 'valid'; payer: string; response: VerifyResponse }
  | { kind: 'invalid'; reason: string; message: string; response: VerifyResponse }
  /** The facilitator could not be asked: nothing happened. */
  | { kind: 'unavailable'; message: string };

export type SettleOutcome =
  /** The facilitator's one `success: true` for this authorization: this request bought it. */
  | { kind: 'settled'; transaction: string; payer: string; response: SettleResponse }
  /** Definitive: refused, or the transaction moved nothing. */
  | { kind: 'failed'; reason: string; message: string; response: SettleResponse }
  /** The facilitator could not be reached before anything was broadcast. */
  | { kind: 'unavailable'; message: string }
  /** Something may have been broadcast; the outcome is unknown (timeout, pending receipt). */
  | { kind: 'unknown'; transaction: string | null; message: string };

export type ChargeResult =
  | { paid: true; payload: PaymentPayload; requirements: PaymentRequirements; settlement: SettleResponse; payer: string }
  /** Send with sendPaymentRequired(); `error` in the challenge says why (absent on a first, unpaid request). */
  | { paid: false; paymentRequired: PaymentRequired; settlement?: SettleResponse };

/** The parts of X402Service (service.ts) that charge.ts and metered.ts call; see there for what each does. */
export interface PaymentSteps {
  readonly network: string;
  facilitator(): CallerFacilitatorClient;
  paymentRequired(resource: PricedResource, error?: string): PaymentRequired;
  readPayment(request: FastifyRequest): PaymentPayload | null;
  match(paymentRequired: PaymentRequired, payload: PaymentPayload): PaymentRequirements | null;
  verify(payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller): Promise<VerifyOutcome>;
  settle(paid: PaymentPayload, requirements: PaymentRequirements, record?: string, caller?: Caller): Promise<SettleOutcome>;
  claimPayment(record: string, expected: ExpectedPayment, paid: { transactionHash: string; logIndex: number }): Promise<boolean>;
}

/** The same steps with every facilitator verify and settle told which request they are for (charge(), chargeUsage()). */
export function stepsFor(x402: PaymentSteps, caller: Caller): PaymentSteps {
  return {
    network: x402.network,
    facilitator: () => x402.facilitator(),
    paymentRequired: (resource, error) => x402.paymentRequired(resource, error),
    readPayment: (request) => x402.readPayment(request),
    match: (paymentRequired, payload) => x402.match(paymentRequired, payload),
    verify: (payload, requirements) => x402.verify(payload, requirements, caller),
    settle: (paid, requirements, record) => x402.settle(paid, requirements, record, caller),
    claimPayment: (record, expected, paid) => x402.claimPayment(record, expected, paid),
  };
}
