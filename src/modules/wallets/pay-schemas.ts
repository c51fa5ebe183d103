import { z } from 'zod';
import { approvalIdSchema, approvalSchema, assetAmount, type ApprovalView } from './policy-schemas.js';

export const MAX_FORWARDED_HEADERS = 50;
export const PAY_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

// RFC 9110 token for names; values without CR, LF or NUL (no header injection).
const headerName = z.string().regex(/^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$/, 'invalid header name');
const headerValue = z.string().max(8192).regex(/^[\t\x20-\x7e\x80-\xff]*$/, 'header values must not contain control characters');

export const payAndCallBody = z
  .object({
    url: z.string().min(1).max(8192).describe('public https URL of the x402 resource'),
    method: z.enum(PAY_METHODS).default('GET'),
    headers: z
      .record(headerName, headerValue)
      .refine((h) => Object.keys(h).length <= MAX_FORWARDED_HEADERS, `at most ${MAX_FORWARDED_HEADERS} headers`)
      .optional(),
    body: z.unknown().optional().describe('a string is sent as is; any other JSON value is sent as JSON'),
    maxPayment: assetAmount,
    approvalId: approvalIdSchema.optional().describe("an approved approval of the wallet's policy (extension): consumed once, for this url and at most its amount"),
  })
  .superRefine((value, ctx) => {
    if (value.method === 'GET' && value.body !== undefined && value.body !== null) {
      ctx.addIssue({ code: 'custom', path: ['body'], message: 'a GET request cannot carry a body' });
    }
  });
export type PayAndCallInput = z.infer<typeof payAndCallBody>;

export const paymentSchema = z.object({
  id: z.string(),
  status: z.enum(['pending', 'settled', 'failed', 'unknown']),
  x402Version: z.number().int(),
  scheme: z.string(),
  network: z.string(),
  asset: z.string(),
  amount: z.string(),
  payTo: z.string(),
  transaction: z.string().nullable(),
  settlement: z.record(z.string(), z.unknown()).nullable(),
  error: z.string().nullable(),
  method: z.string(),
  resource: z.string(),
  host: z.string().nullable().describe("the paid resource's host; null for a transfer (method TRANSFER)"),
  requestId: z.string().nullable().describe('the id of the request that asked for the payment (its X-Request-Id when the caller sent one)'),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type PaymentView = z.infer<typeof paymentSchema>;

export const BASE64_MARKER = 'base64' as const;
export const upstreamSchema = z.object({
  status: z.number().int(),
  headers: z.record(z.string(), z.string()),
  body: z.unknown().describe('parsed JSON, text, null when empty, or { encoding: "base64", data } for binary'),
  bodyEncoding: z.enum(['json', 'text', 'base64', 'empty']),
});
export type UpstreamView = z.infer<typeof upstreamSchema>;

export const payAndCallResult = z.object({ upstream: upstreamSchema, payment: paymentSchema.nullable() });
/** 202: the policy asks a human first (extension); nothing was signed. */
export const payAndCallApproval = z.object({ approval: approvalSchema });

export const paymentsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  before: z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a payment id').optional().describe('payment id: list payments older than this one'),
});

/** What pay-and-call answers: the upstream's answer and the payment made (null: none was asked). */
export type PayAndCallResult =
  | { upstream: UpstreamView; payment: PaymentView | null }
  /** The wallet's policy wants a human to approve this payment first: nothing was signed (answered 202). */
  | { approval: ApprovalView };
