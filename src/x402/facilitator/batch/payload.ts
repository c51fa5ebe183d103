// batch-settlement payloads as our facilitator takes them (x402-foundation/x402 specs/schemes/batch-settlement,
// @x402/evm 2.27): a deposit into a channel (a payer's ERC-3009 receiveWithAuthorization, through the canonical
// collector), a voucher (off-chain: verify only), and the receiver side's claim, settle (sweep) and refund.
//
// The ledger keys, one per thing that must succeed once:
// - a deposit: its ERC-3009 authorization, in the token's own nonce space (nonce = keccak256(channelId, salt), what
//   the collector signs for): the same key an `exact` payment of that nonce would take, so neither can be paid twice;
// - a claim: one row per voucher increment, (channel, cumulative total claimed), under the batch contract;
// - a refund: (channel, refund nonce), under the batch contract (the contract's own replay counter).
import { computeChannelId } from '@x402/evm/batch-settlement/client';
import { encodeAbiParameters, encodePacked, getAddress, keccak256, type Address, type Hex } from 'viem';
import { z } from 'zod';
import { BATCH_SETTLEMENT } from '../../../chain/x402-contracts.js';
import { evmAddress } from '../../payload.js';
import type { SettlementKey } from '../ledger.js';

const uint = z.string().regex(/^\d{1,39}$/, 'must be an unsigned integer string (uint128)');
const hex = z.string().regex(/^0x([0-9a-fA-F]{2})*$/);
const bytes32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/);

export const channelConfigSchema = z.object({
  payer: evmAddress,
  payerAuthorizer: evmAddress,
  receiver: evmAddress,
  receiverAuthorizer: evmAddress,
  token: evmAddress,
  withdrawDelay: z.number().int().min(0).max(2 ** 40 - 1),
  salt: bytes32,
});
export type ChannelConfig = z.infer<typeof channelConfigSchema>;

const voucherSchema = z.object({ channelId: bytes32, maxClaimableAmount: uint, signature: hex });
const claimSchema = z.object({
  voucher: z.object({ channel: channelConfigSchema, maxClaimableAmount: uint }),
  signature: hex,
  totalClaimed: uint,
});
export type VoucherClaim = z.infer<typeof claimSchema>;

export const depositSchema = z.object({
  type: z.literal('deposit'),
  channelConfig: channelConfigSchema,
  voucher: voucherSchema,
  deposit: z.object({
    amount: uint,
    authorization: z.object({
      erc3009Authorization: z.object({ validAfter: z.string().regex(/^\d{1,78}$/), validBefore: z.string().regex(/^\d{1,78}$/), salt: z.string().regex(/^(0x[0-9a-fA-F]{1,64}|\d{1,78})$/), signature: hex }).optional(),
      permit2Authorization: z.unknown().optional(),
    }),
  }),
});
export type DepositPayload = z.infer<typeof depositSchema>;

export const claimPayloadSchema = z.object({ type: z.literal('claim'), claims: z.array(claimSchema).min(1).max(500), claimAuthorizerSignature: hex.optional() });
export type ClaimPayload = z.infer<typeof claimPayloadSchema>;

export const sweepSchema = z.object({ type: z.literal('settle'), receiver: evmAddress, token: evmAddress });

export const refundSchema = z.object({
  type: z.literal('refund'),
  channelConfig: channelConfigSchema,
  voucher: voucherSchema,
  amount: uint,
  refundNonce: uint,
  claims: z.array(claimSchema).max(500),
  refundAuthorizerSignature: hex.optional(),
  claimAuthorizerSignature: hex.optional(),
});
export type RefundPayload = z.infer<typeof refundSchema>;

export const channelIdOf = (config: ChannelConfig, network: string): Hex => computeChannelId(config as never, network as `${string}:${string}`) as Hex;

/** The ERC-3009 nonce the collector's receiveWithAuthorization uses for a deposit (ERC3009DepositCollector.collect). */
export const depositNonce = (channelId: Hex, salt: string): Hex => keccak256(encodeAbiParameters([{ type: 'bytes32' }, { type: 'uint256' }], [channelId, BigInt(salt)]));

export const depositKey = (network: string, config: ChannelConfig, nonce: Hex): SettlementKey => ({ network, asset: getAddress(config.token), payer: getAddress(config.payer), nonce: nonce.toLowerCase() });

/** One voucher increment: the channel reaching this cumulative total claimed. */
export const claimKey = (network: string, config: ChannelConfig, channelId: Hex, totalClaimed: bigint): SettlementKey => ({
  network,
  asset: BATCH_SETTLEMENT,
  payer: getAddress(config.payer),
  nonce: keccak256(encodePacked(['string', 'bytes32', 'uint128'], ['claim', channelId, totalClaimed])).toLowerCase(),
});

export const refundKey = (network: string, config: ChannelConfig, channelId: Hex, refundNonce: bigint): SettlementKey => ({
  network,
  asset: BATCH_SETTLEMENT,
  payer: getAddress(config.payer),
  nonce: keccak256(encodePacked(['string', 'bytes32', 'uint256'], ['refund', channelId, refundNonce])).toLowerCase(),
});

export const ZERO_ADDRESS: Address = '0x0000000000000000000000000000000000000000';

/** The contract's struct (checksummed addresses). */
export const contractConfig = (c: ChannelConfig) => ({
  payer: getAddress(c.payer),
  payerAuthorizer: getAddress(c.payerAuthorizer),
  receiver: getAddress(c.receiver),
  receiverAuthorizer: getAddress(c.receiverAuthorizer),
  token: getAddress(c.token),
  withdrawDelay: c.withdrawDelay,
  salt: c.salt as Hex,
});

export const contractClaims = (claims: VoucherClaim[]) =>
  claims.map((c) => ({ voucher: { channel: contractConfig(c.voucher.channel), maxClaimableAmount: BigInt(c.voucher.maxClaimableAmount) }, signature: c.signature as Hex, totalClaimed: BigInt(c.totalClaimed) }));
