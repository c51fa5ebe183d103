// Wire shapes of x402 v2 (zod 4, ours: the SDK's schemas are zod 3 and must not mix with route
// schemas) and the EIP-3009 payload of the exact EVM scheme.
import { z } from 'zod';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';

const hex = (bytes?: number) =>
  z.string().regex(bytes === undefined ? /^0x([0-9a-fA-F]{2})*$/ : new RegExp(`^0x[0-9a-fA-F]{${bytes * 2}}$`));
const uint = z.string().regex(/^\d{1,78}$/, 'must be an unsigned integer string');
export const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address');

export const requirementsSchema = z.object({
  scheme: z.string().min(1),
  network: z.string().regex(/^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,64}$/, 'must be a CAIP-2 id'),
  asset: z.string().min(1),
  amount: uint,
  payTo: z.string().min(1),
  // 0 only where nothing is signed against it: batch-settlement's claim and settle requests carry 0.
  maxTimeoutSeconds: z.number().int().nonnegative(),
  extra: z.record(z.string(), z.unknown()).default({}),
});

export const resourceSchema = z.object({
  url: z.string(),
  description: z.string().optional(),
  mimeType: z.string().optional(),
  serviceName: z.string().optional(),
});

export const paymentPayloadSchema = z.object({
  x402Version: z.number().int(),
  resource: resourceSchema.optional(),
  accepted: requirementsSchema,
  payload: z.record(z.string(), z.unknown()),
  extensions: z.record(z.string(), z.unknown()).optional(),
});

export const eip3009PayloadSchema = z.object({
  signature: hex(),
  authorization: z.object({
    from: evmAddress,
    to: evmAddress,
    value: uint,
    validAfter: uint,
    validBefore: uint,
    nonce: hex(32),
  }),
});

export type Eip3009Payload = z.infer<typeof eip3009PayloadSchema>;

/**
 * Body of the facilitator's POST /verify and POST /settle. The two halves are optional here so that a
 * missing one is answered in the x402 shape (`invalid_payload` / `invalid_payment_requirements`, by
 * parseFacilitatorRequest), not as a generic request error.
 */
export const facilitatorRequestSchema = z.object({
  x402Version: z.number().int(),
  paymentPayload: z.unknown().optional(),
  paymentRequirements: z.unknown().optional(),
});

export type ParsedRequest =
  | { ok: true; payload: PaymentPayload; requirements: PaymentRequirements }
  | { ok: false; reason: 'invalid_payload' | 'invalid_payment_requirements'; message: string };

/** Validates the two halves of a facilitator request, naming the half that is malformed. */
export function parseFacilitatorRequest(paymentPayload: unknown, paymentRequirements: unknown): ParsedRequest {
  const payload = paymentPayloadSchema.safeParse(paymentPayload);
  if (!payload.success) return { ok: false, reason: 'invalid_payload', message: z.prettifyError(payload.error) };
  const requirements = requirementsSchema.safeParse(paymentRequirements);
  if (!requirements.success) {
    return { ok: false, reason: 'invalid_payment_requirements', message: z.prettifyError(requirements.error) };
  }
  return { ok: true, payload: payload.data as PaymentPayload, requirements: requirements.data as PaymentRequirements };
}
