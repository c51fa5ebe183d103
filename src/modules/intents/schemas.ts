import { z } from 'zod';
import { INTENT_STATUSES, PAID_VIA, REFUND_STATUSES } from './tables.js';

/** The spec's Limits table for intent creation. */
export const INTENT_LIMITS = {
  amountUsdCents: { min: 100, max: 100_000_000 },
  merchantId: { min: 1, max: 200 },
  externalId: { min: 1, max: 200 },
  customerRef: { min: 1, max: 200 },
  description: { min: 1, max: 500 },
  /** UTF-8 bytes of JSON.stringify(metadata). */
  metadataBytes: 16 * 1024,
  returnUrl: { max: 2048 },
} as const;

/** Hosts an http returnUrl may name, and only on the embedded devchain (service.ts decides that part). */
export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * The shape of a returnUrl, whatever the deployment: an absolute https URL, or http on a loopback host;
 * no user:password@ part (it could dress one host up as another), no whitespace or control characters.
 * Never throws, whatever the input (the fuzz sends anything).
 */
export function returnUrlProblem(value: string): string | null {
  if (/[\s\u0000-\u001f\u007f]/.test(value)) return 'must not contain whitespace or control characters';
  // Written with its slashes: `https:evil.example` parses here, but on a page it is a relative link.
  if (!/^https?:\/\//i.test(value)) return 'must be an absolute http(s) URL (https://…)';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.username || url.password) return 'must not contain a user name or password';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return null;
  return 'must be https (http only on a loopback host, in development on the embedded devchain)';
}

// PostgreSQL text and jsonb cannot hold U+0000; refusing it here keeps it a 400, not a 500.
const NUL = /\u0000/;
const text = (bounds: { min: number; max: number }) =>
  z.string().min(bounds.min).max(bounds.max).refine((value) => !NUL.test(value), 'must not contain U+0000');

const metadata = z
  .record(z.string(), z.unknown())
  .refine((value) => Buffer.byteLength(JSON.stringify(value), 'utf8') <= INTENT_LIMITS.metadataBytes, {
    message: `serialized metadata must be at most ${INTENT_LIMITS.metadataBytes} bytes`,
  })
  .refine((value) => !containsNul(value), 'must not contain U+0000');

function containsNul(value: unknown): boolean {
  if (typeof value === 'string') return NUL.test(value);
  if (Array.isArray(value)) return value.some(containsNul);
  if (value && typeof value === 'object') return Object.entries(value).some(([key, item]) => NUL.test(key) || containsNul(item));
  return false;
}

export const createIntentBody = z.object({
  merchantId: text(INTENT_LIMITS.merchantId),
  amountUsdCents: z.number().int().min(INTENT_LIMITS.amountUsdCents.min).max(INTENT_LIMITS.amountUsdCents.max),
  externalId: text(INTENT_LIMITS.externalId),
  // null is read as "not given", the value the intent then shows.
  customerRef: text(INTENT_LIMITS.customerRef).nullish(),
  description: text(INTENT_LIMITS.description).nullish(),
  metadata: metadata.nullish(),
  returnUrl: z
    .string()
    .max(INTENT_LIMITS.returnUrl.max)
    .superRefine((value, check) => {
      const problem = returnUrlProblem(value);
      if (problem) check.addIssue({ code: 'custom', message: problem });
    })
    .nullish()
    .describe(
      'Extension: where the settled checkout page links back to ("Back to {merchant}"). https; http only on 127.0.0.1, [::1] or localhost while the service runs on the embedded devchain. Never redirected to.',
    ),
});
export type CreateIntentInput = z.infer<typeof createIntentBody>;

export const intentIdParams = z.object({ intentId: z.string().min(1).max(200) });

/** The last verified payment attempt that did not pay the intent, which stayed payable (extension). */
const lastPaymentError = z
  .object({
    code: z.string().describe("A facilitator reason code (e.g. invalid_exact_evm_insufficient_balance), or one of ours: facilitator_unavailable, authorization_expired"),
    message: z.string(),
    at: z.string(),
  })
  .nullable()
  .describe(
    'Extension: the last payment that verified but did not pay this intent (a settle that moved nothing, an authorization used elsewhere or expired unused, a facilitator that sent nothing); the intent stayed payable. Kept after later moves; null when there was none',
  );

export const intentSchema = z.object({
  id: z.string(),
  merchantId: z.string(),
  externalId: z.string(),
  customerRef: z.string().nullable(),
  description: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
  status: z.enum(INTENT_STATUSES),
  amountUsdCents: z.number().int(),
  currency: z.literal('USD'),
  paymentUrl: z.string(),
  network: z.string(),
  asset: z.string(),
  payTo: z.string(),
  transactionHash: z.string().nullable(),
  createdAt: z.string(),
  settledAt: z.string().nullable(),
  expiresAt: z.string(),
  failureCode: z.string().nullable(),
  failureMessage: z.string().nullable(),
  returnUrl: z.string().nullable().describe('Extension: the link the settled checkout offers back to the merchant, or null'),
  lastPaymentError,
  paidVia: z.enum(PAID_VIA).nullable().describe('Extension: how the settled intent was paid: x402 (the pay endpoint) or deposit (transfers to its deposit address); null until settled'),
  receivedUsdCents: z
    .number()
    .int()
    .describe('Extension: whole cents received for this intent in all: its x402 payment and every transfer to its deposit address (short, over or after expiry); what refunds may pay back'),
  refundedUsdCents: z.number().int().describe('Extension: cents of its refunds that succeeded or are pending'),
  payer: z.string().nullable().describe('Extension: who paid it (the x402 payer, or the sender of the deposit that completed it); null until settled'),
});
export type IntentView = z.infer<typeof intentSchema>;

/** Body of a successful pay (and of a retry on a settled intent). */
export const settlementBodySchema = z.object({
  id: z.string(),
  status: z.enum(INTENT_STATUSES),
  amountUsdCents: z.number().int(),
  currency: z.literal('USD'),
  settlement: z
    .object({ transaction: z.string(), network: z.string(), payer: z.string().nullable(), settledAt: z.string().nullable() })
    .nullable(),
});
export type SettlementBody = z.infer<typeof settlementBodySchema>;


/** The public checkout view (GET /v1/payment-intents/{id}/checkout): what the payer's page shows, nothing the merchant keeps private. */
export const checkoutViewSchema = z.object({
  id: z.string(),
  status: z.enum(INTENT_STATUSES),
  amountUsdCents: z.number().int(),
  currency: z.literal('USD'),
  amount: z.string().describe('Atomic units the 402 challenge asks for'),
  network: z.string(),
  asset: z.string(),
  payTo: z.string(),
  merchant: z.object({ name: z.string() }),
  description: z.string().nullable(),
  returnUrl: z.string().nullable().describe("The merchant's link back (\"Back to {merchant.name}\"); shown as a link, never redirected to"),
  expiresAt: z.string(),
  settledAt: z.string().nullable(),
  transactionHash: z.string().nullable(),
  failureCode: z.string().nullable(),
  failureMoneyMoved: z
    .enum(['none', 'not_for_this_intent', 'unknown'])
    .nullable()
    .describe("A failed intent's money: none (refused before any transfer, or it reverted), not_for_this_intent (a transfer happened that did not pay it), unknown; null unless failed"),
  lastPaymentError: z
    .object({ code: z.string(), at: z.string() })
    .nullable()
    .describe('The last payment that verified but did not pay this intent, which stayed payable (nothing was charged for it): its code, for the page to say in words, and when; null when there was none'),
  paidVia: z.enum(PAID_VIA).nullable().describe('How the settled intent was paid (x402 or deposit); null until settled'),
  payer: z.string().nullable().describe('Who paid it (the x402 payer, or the sender of the deposit that completed it); null until settled'),
  deposit: z
    .object({
      address: z.string().describe("The intent's own deposit address: any wallet or exchange pays it with a plain USDG transfer"),
      due: z.string().describe('Atomic units still due (0 once paid, or when it can no longer be paid)'),
      uri: z.string().describe('EIP-681 URI of a transfer of what is due to the address (the QR code encodes it)'),
    })
    .nullable()
    .describe('The deposit address, made on the first read of a pending intent; null for an intent that never had one'),
});

export const projectIntentsQuery = z.object({
  merchantId: z.uuid().optional(),
  status: z.enum(INTENT_STATUSES).optional(),
  externalId: z.string().min(1).max(200).optional().describe('Intents whose externalId starts with this (case-sensitive)'),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  before: z.uuid().optional().describe('The last id of the previous page'),
});
export type CheckoutView = z.infer<typeof checkoutViewSchema>;

export const refundBody = z.object({
  amountUsdCents: z.number().int().min(1).max(INTENT_LIMITS.amountUsdCents.max).describe('At most what was received less what is refunded (409 refund_exceeds_refundable)'),
});

export const refundSchema = z.object({
  id: z.string(),
  intentId: z.string(),
  amountUsdCents: z.number().int(),
  status: z.enum(REFUND_STATUSES).describe('pending (sent, not yet final), succeeded, failed (nothing was paid; its cents may be refunded again)'),
  transaction: z.string().nullable().describe('The transaction that paid it back, once succeeded'),
  recipient: z.string().describe('Who is paid back: the payer'),
  failureCode: z.string().nullable(),
  failureMessage: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type RefundView = z.infer<typeof refundSchema>;

/** Totals of a project's intents under the listing's filters (the dashboard's summary line). */
export const intentTotalsSchema = z.object({
  count: z.number().int(),
  settledCount: z.number().int(),
  settledUsdCents: z.number().int().describe('Amounts of the settled intents'),
  receivedUsdCents: z.number().int().describe('Everything received (x402 payments and deposits, over and late ones too), whole cents'),
  refundedUsdCents: z.number().int(),
});
export type IntentTotals = z.infer<typeof intentTotalsSchema>;
