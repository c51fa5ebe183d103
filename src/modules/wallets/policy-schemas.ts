import { z } from 'zod';
import { UUID_PATTERN } from '../../platform/ids.js';

// The spend policy of a wallet (docs/wallets.md, "Spend policies"): request and response shapes.

export const POLICY_WINDOWS = { '1h': 3_600, '24h': 86_400, '7d': 604_800, '30d': 2_592_000 } as const;
export type PolicyWindow = keyof typeof POLICY_WINDOWS;
export const MAX_POLICY_LIMITS = 10;
export const MAX_POLICY_LIST = 100;
export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 3_600;
/** Live pending approvals a wallet may have at once (an agent asking for ever new ones is refused past it). */
export const MAX_PENDING_APPROVALS = 100;

const network = z.string().regex(/^eip155:[1-9]\d{0,18}$/, 'network must be an EVM CAIP-2 id (eip155:<chainId>)');
const asset = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'asset must be an ERC-20 contract address');
const amount = z.string().regex(/^\d{1,78}$/, 'amount must be an integer string of atomic units');
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be an EVM address');
// An exact host or `*.` + a domain (any of its subdomains), lowercase, no port.
const hostPattern = z
  .string()
  .max(253)
  .regex(/^(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/, 'must be a lowercase host name or *.domain');

/** An amount of one asset on one network, atomic units (pay-and-call's maxPayment has this shape too). */
export const assetAmount = z.object({ network, asset, amount });
export const policyAmount = assetAmount.strict();
export type PolicyAmount = z.infer<typeof policyAmount>;

export const policyLimit = policyAmount.extend({ window: z.enum(Object.keys(POLICY_WINDOWS) as [PolicyWindow, ...PolicyWindow[]]) });
export type PolicyLimit = z.infer<typeof policyLimit>;

export const policyBody = z
  .object({
    limits: z.array(policyLimit).max(MAX_POLICY_LIMITS).optional().describe('rolling windows over open and settled payments, atomic units'),
    maxPerCall: policyAmount.optional(),
    allowHosts: z.array(hostPattern).max(MAX_POLICY_LIST).optional().describe('when present, only these hosts may be paid'),
    denyHosts: z.array(hostPattern).max(MAX_POLICY_LIST).optional(),
    allowPayTo: z.array(address).max(MAX_POLICY_LIST).optional().describe('when present, only these recipients may be paid'),
    denyPayTo: z.array(address).max(MAX_POLICY_LIST).optional(),
    approvalAbove: policyAmount.optional().describe('a payment above this amount waits for a human approval'),
    approvalTimeoutSeconds: z.number().int().min(60).max(86_400).optional().describe(`default ${DEFAULT_APPROVAL_TIMEOUT_SECONDS}`),
  })
  .strict();
export type Policy = z.infer<typeof policyBody>;

export const policySchema = policyBody.extend({
  walletId: z.string(),
  approvalTimeoutSeconds: z.number().int(),
  updatedAt: z.string().nullable().describe('null: no policy was ever set (no rules)'),
});
export type PolicyView = z.infer<typeof policySchema>;

export const budgetLimitSchema = z.object({
  window: z.string(),
  network: z.string(),
  asset: z.string(),
  amount: z.string(),
  spent: z.string().describe('settled payments of the window'),
  reserved: z.string().describe('open payments of the window (signed or about to be, not yet settled)'),
  remaining: z.string(),
  nextReleaseAt: z.string().nullable().describe('when the oldest counted payment leaves the window'),
});
export type BudgetLimitView = z.infer<typeof budgetLimitSchema>;

export const APPROVAL_STATUSES = ['pending', 'approved', 'denied', 'consumed', 'expired'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

export const approvalSchema = z.object({
  id: z.string(),
  walletId: z.string(),
  status: z.enum(APPROVAL_STATUSES),
  network: z.string(),
  asset: z.string(),
  amount: z.string(),
  payTo: z.string(),
  method: z.string(),
  url: z.string(),
  createdAt: z.string(),
  expiresAt: z.string(),
  decidedBy: z.string().nullable().describe('the management credential that approved or denied it'),
  decidedAt: z.string().nullable(),
  paymentId: z.string().nullable().describe('the payment that consumed it'),
  consumedAt: z.string().nullable(),
});
export type ApprovalView = z.infer<typeof approvalSchema>;

export const approvalsQuery = z.object({ status: z.enum(APPROVAL_STATUSES).optional() });
export const approvalParams = z.object({ walletId: z.string(), approvalId: z.string() });
export const approvalIdSchema = z.string().regex(UUID_PATTERN, 'must be an approval id');

/** Where a wallet's approval requests are published (approval-events.ts), or null: nowhere. */
export const approvalQueueSchema = z.object({ projectId: z.string(), queueId: z.string() }).nullable();
export type ApprovalQueueView = z.infer<typeof approvalQueueSchema>;

/**
 * The management credential names the queue: it belongs to no project, so an API key of the queue's project
 * proves the right to write into it (checked, never stored or shown).
 */
export const approvalEventsBody = z
  .strictObject({
    projectId: z.uuid().describe('the project of the queue'),
    queueId: z.uuid().describe("one of that project's event queues"),
    projectApiKey: z.string().min(1).max(200).describe("an active API key (svc_api_…) of that project: proves the right to publish into its queue; never stored or shown"),
  })
  .nullable()
  .describe('null: publish no more');
export type ApprovalEventsInput = z.infer<typeof approvalEventsBody>;
