import { z } from 'zod';
import { payAndCallApproval, payAndCallBody, paymentSchema, upstreamSchema } from './pay-schemas.js';
import { assetAmount } from './policy-schemas.js';

// Wallet channels (x402 batch-settlement, docs/wallets.md "Channels"): request and response shapes.

/** A deposit: a positive integer of atomic units that fits the contract's uint128. */
const depositAmount = z
  .string()
  .regex(/^\d{1,39}$/, 'must be an integer string of atomic units')
  .refine((a) => !/^\d+$/.test(a) || (BigInt(a) > 0n && BigInt(a) < 2n ** 128n), 'must be above 0 and fit in a uint128')
  .describe('atomic units locked in the channel (refundable: not spent)');

export const channelParams = z.object({ channelId: z.string().max(100).describe('our channel id (uuid) or the on-chain channel id (bytes32 hex)') });

/** Open: a paid call of a batch-settlement resource that deposits `deposit` with its first voucher. */
export const openChannelBody = payAndCallBody.and(z.object({ deposit: depositAmount }));
export type OpenChannelInput = z.infer<typeof openChannelBody>;

/** Top-up: another deposit, with the voucher of one call of the resource the channel was opened at. */
export const topUpChannelBody = z.object({ deposit: depositAmount, maxPayment: assetAmount.describe("the most that call's voucher may cost") }).strict();

export const channelSchema = z.object({
  id: z.string(),
  channelId: z.string().describe('the on-chain channel id (bytes32)'),
  status: z.enum(['open', 'closed']),
  network: z.string(),
  asset: z.string(),
  payee: z.string().describe("the seller's receiver"),
  receiverAuthorizer: z.string().describe("the seller's key that authorises claims and refunds"),
  url: z.string().describe('the resource the channel was opened at: where top-ups and the refund go'),
  withdrawDelay: z.number().int().describe('seconds between a payer withdrawal being asked and it being final'),
  deposited: z.string().describe('what the channel holds as the wallet recorded it (deposits, minus refunds)'),
  paid: z.string().describe('the cumulative amount the seller confirmed charging by vouchers'),
  signedMax: z.string().describe('the highest cumulative voucher the wallet signed: the most the seller can claim'),
  claimed: z.string().nullable().describe("what the seller claimed on chain (the contract's totalClaimed); null when the chain could not be read"),
  chainBalance: z.string().nullable().describe("the channel's balance on chain; null when the chain could not be read"),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ChannelView = z.infer<typeof channelSchema>;

export const openChannelResult = z.object({ channel: channelSchema, upstream: upstreamSchema, payment: paymentSchema });
export const openChannelApproval = payAndCallApproval;
export const closeChannelResult = z.object({
  channel: channelSchema,
  refunded: z.string().describe('what came back to the wallet, atomic units'),
  transaction: z.string().nullable().describe("the seller's refund transaction; null when there was nothing to refund"),
});
