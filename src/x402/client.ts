// Paying side of x402, for tests and for wallet pay-and-call: read a 402 challenge and sign an
// EIP-3009 payment for it with a viem local account through the @x402 client.
import { x402Client } from '@x402/core/client';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { ExactEvmScheme as ExactEvmClientScheme } from '@x402/evm/exact/client';
import type { LocalAccount } from 'viem/accounts';
import { DEFAULT_ASSET } from '../chain/registry.js';
import { parsePaymentRequired, parseSettlement } from './seller-answers.js';
import { shortLivedExactScheme, type ShortLivedValidity } from './short-lived-scheme.js';
import { shortLivedUptoScheme } from './short-lived-upto.js';

export interface PaymentLimit {
  network: string;
  /** Token address the payer accepts to pay with. */
  asset: string;
  /** Most atomic units one payment may cost; omitted = uncapped. */
  maxAmountPerPayment?: string;
}

export interface SignPaymentOptions {
  /** Spend controls: which assets may be paid, and up to how much. Default: USDG on eip155:4663, uncapped. */
  allow?: PaymentLimit[];
  /** Picks among acceptable requirements; default the first. */
  select?: (requirements: PaymentRequirements[]) => PaymentRequirements;
  /** Sign valid from the chain's time for at most this long (short-lived-scheme.ts); default: the SDK's whole maxTimeoutSeconds. */
  validity?: ShortLivedValidity;
  /** Also sign `upto` permits (Permit2, short-lived-upto.ts; needs `validity`). Default: `exact` only. */
  upto?: boolean;
}

export interface SignedPayment {
  payload: PaymentPayload;
  /** Value for the PAYMENT-SIGNATURE request header. */
  header: string;
}

/** Signs a payment for a challenge. Throws when no requirement passes the spend controls. */
export async function signPayment(account: LocalAccount, paymentRequired: PaymentRequired, options: SignPaymentOptions = {}): Promise<SignedPayment> {
  const allow = options.allow ?? [{ network: DEFAULT_ASSET.network, asset: DEFAULT_ASSET.address }];
  const networks = [...new Set(allow.map((a) => a.network))];
  const client = x402Client.fromConfig({
    schemes: networks.flatMap((network) => [
      { network: network as `${string}:${string}`, client: options.validity ? shortLivedExactScheme(account, options.validity) : new ExactEvmClientScheme(account) },
      ...(options.upto && options.validity ? [{ network: network as `${string}:${string}`, client: shortLivedUptoScheme(account, options.validity) }] : []),
    ]),
    // The SDK's default allows only its built-in assets (USDG on 4663 is not one): name ours.
    spendControls: {
      allowedAssets: allow.map((a) => ({
        network: a.network as `${string}:${string}`,
        asset: a.asset,
        ...(a.maxAmountPerPayment ? { maxAmountPerPayment: a.maxAmountPerPayment } : {}),
      })),
    },
    ...(options.select ? { paymentRequirementsSelector: (_v: number, reqs: PaymentRequirements[]) => options.select!(reqs) } : {}),
  });
  const payload = await client.createPaymentPayload(paymentRequired);
  return { payload, header: encodePaymentSignatureHeader(payload) };
}

/** The challenge of a 402 response: the PAYMENT-REQUIRED header, else the JSON body (seller-answers.ts). */
export function readPaymentRequired(getHeader: (name: string) => string | null | undefined, body?: unknown): PaymentRequired {
  return parsePaymentRequired(getHeader, body);
}

/** The settlement of a paid response (PAYMENT-RESPONSE, else X-PAYMENT-RESPONSE); throws when there is none. */
export function readSettlement(getHeader: (name: string) => string | null | undefined) {
  const settlement = parseSettlement(getHeader);
  if (!settlement) throw new Error('the response carries no PAYMENT-RESPONSE header');
  return settlement;
}
