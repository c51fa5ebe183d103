// A Permit2 payment as the x402 proxies execute it: `exact` (x402ExactPermit2Proxy moves the permitted amount) and
// `upto` (x402UptoPermit2Proxy moves what the seller settles, at most the permitted amount, and only when sent by
// the facilitator the payer named in the witness). The request-level checks that need no chain, the settlement
// key, and the calldata a settle sends.
//
// The key is Permit2's own replay domain: a permit's nonce is the payer's at Permit2 across every token and
// spender, so the ledger row is (network, Permit2, payer, nonce), never the token's (whose EIP-3009 nonces are
// another space: an EIP-3009 nonce and a Permit2 nonce with the same number are different authorizations).
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { x402ExactPermit2ProxyABI, x402UptoPermit2ProxyABI } from '@x402/evm';
import { encodeFunctionData, getAddress, isAddress, parseErc6492Signature, toHex, type Address, type Hex } from 'viem';
import { z } from 'zod';
import { keccak256Text } from '../../../chain/keccak.js';
import { findAsset } from '../../../chain/registry.js';
import { EXACT_PERMIT2_PROXY, PERMIT2_ADDRESS, UPTO_PERMIT2_PROXY } from '../../../chain/x402-contracts.js';
import { evmAddress } from '../../payload.js';
import { MAX_TIMEOUT_SECONDS } from '../bounds.js';
import type { SettlementKey } from '../ledger.js';
import { Reason } from '../reasons.js';

export type Permit2Kind = 'permit2-exact' | 'permit2-upto';

export interface Permit2Payment {
  kind: Permit2Kind;
  /** The proxy that executes it (the permit's spender). */
  proxy: Address;
  payer: Address;
  token: Address;
  /** What the payer signed for: the exact amount, or upto's ceiling. */
  permitted: bigint;
  /** What a settle moves: the requirements' amount (for upto, the actual use the seller settles). */
  amount: bigint;
  nonce: bigint;
  deadline: bigint;
  to: Address;
  validAfter: bigint;
  /** upto only: the one relayer key allowed to send it (msg.sender must equal it). */
  facilitator?: Address;
  signature: Hex;
}

export type ParsedPermit2 = { ok: true; payment: Permit2Payment; key: SettlementKey } | { ok: false; reason: string; message: string; payer?: string };

const uint = z.string().regex(/^\d{1,78}$/);
const permit2PayloadSchema = z.object({
  signature: z.string().regex(/^0x([0-9a-fA-F]{2})+$/),
  permit2Authorization: z.object({
    from: evmAddress,
    permitted: z.object({ token: evmAddress, amount: uint }),
    spender: evmAddress,
    nonce: uint,
    deadline: uint,
    witness: z.object({ to: evmAddress, validAfter: uint, facilitator: evmAddress.optional() }),
  }),
});

const UINT256_MAX = 2n ** 256n - 1n;
/** Gas-sponsoring extensions this facilitator does not offer (it advertises neither): their payloads are refused, not half-honoured. */
const SPONSORING_EXTENSIONS = ['eip2612GasSponsoring', 'erc20ApprovalGasSponsoring'];

/** Whether the payload is a Permit2 one (the SDK's own test: it carries `permit2Authorization`). */
export const isPermit2 = (payload: PaymentPayload): boolean => typeof payload.payload === 'object' && payload.payload !== null && 'permit2Authorization' in payload.payload;

/** Everything the request alone decides, in the order a client would fix it; the chain's time and state come later. */
export function parsePermit2(network: string, payload: PaymentPayload, requirements: PaymentRequirements): ParsedPermit2 {
  const claimed = (payload.payload as { permit2Authorization?: { from?: unknown } }).permit2Authorization?.from;
  const fail = (reason: string, message: string): ParsedPermit2 => ({ ok: false, reason, message, payer: typeof claimed === 'string' ? claimed : undefined });
  if (payload.x402Version !== 2) return fail(Reason.invalidX402Version, `x402Version ${payload.x402Version} is not supported; use 2`);
  const scheme = requirements.scheme;
  if (scheme !== 'exact' && scheme !== 'upto') return fail(Reason.unsupportedScheme, `scheme ${scheme} does not take a Permit2 payload`);
  if (payload.accepted.scheme !== scheme) return fail(scheme === 'upto' ? 'invalid_upto_evm_scheme' : Reason.invalidScheme, 'the payload was made for another scheme');
  if (requirements.network !== network) return fail(Reason.invalidNetwork, `network ${requirements.network} is not supported; use ${network}`);
  if (payload.accepted.network !== requirements.network) return fail(scheme === 'upto' ? 'invalid_upto_evm_network_mismatch' : Reason.networkMismatch, 'the payment is for another network');
  if (!findAsset(network, requirements.asset)) return fail(Reason.invalidPaymentRequirements, `asset ${requirements.asset} is not supported on ${network}`);
  if (!isAddress(requirements.payTo)) return fail(Reason.invalidPaymentRequirements, 'payTo must be an EVM address');
  if (!/^\d{1,78}$/.test(requirements.amount)) return fail(Reason.invalidPaymentRequirements, 'amount must be an unsigned integer string');
  if (requirements.maxTimeoutSeconds > MAX_TIMEOUT_SECONDS) return fail(Reason.invalidPaymentRequirements, `maxTimeoutSeconds must be at most ${MAX_TIMEOUT_SECONDS}`);
  if (requirements.maxTimeoutSeconds < 1) return fail(Reason.invalidPaymentRequirements, 'maxTimeoutSeconds must be at least 1');
  if (SPONSORING_EXTENSIONS.some((key) => payload.extensions?.[key] !== undefined)) {
    return fail(Reason.unsupportedPayloadType, 'gas-sponsoring extensions are not offered by this facilitator: approve Permit2 for the token first');
  }
  const parsed = permit2PayloadSchema.safeParse(payload.payload);
  if (!parsed.success) return fail(Reason.invalidPayload, 'payload must be a Permit2 authorization (permit2Authorization) with a signature');
  const auth = parsed.data.permit2Authorization;
  const numbers = [auth.permitted.amount, auth.nonce, auth.deadline, auth.witness.validAfter].map(BigInt);
  if (numbers.some((n) => n > UINT256_MAX)) return fail(Reason.invalidPayload, 'a Permit2 number is out of the uint256 range');
  const [permitted, nonce, deadline, validAfter] = numbers as [bigint, bigint, bigint, bigint];
  const kind: Permit2Kind = scheme === 'upto' ? 'permit2-upto' : 'permit2-exact';
  if (kind === 'permit2-upto' && !auth.witness.facilitator) return fail(Reason.invalidPayload, 'an upto permit names its facilitator in the witness');
  if (kind === 'permit2-exact' && auth.witness.facilitator) return fail(Reason.invalidPayload, 'an exact permit has no facilitator in its witness');
  const amount = BigInt(requirements.amount);
  // exact moves the permitted amount, which must be the price; upto settles at most its ceiling (0 settles nothing).
  if (kind === 'permit2-exact' && (amount === 0n || permitted !== amount)) return fail('permit2_amount_mismatch', 'the permit does not move exactly the required amount');
  if (kind === 'permit2-upto' && amount > permitted) return fail('invalid_upto_evm_payload_settlement_exceeds_amount', 'the settled amount is above what the payer permitted');
  if (permitted === 0n) return fail(Reason.invalidPayload, 'the permit moves nothing');
  const payment: Permit2Payment = {
    kind,
    proxy: getAddress(auth.spender),
    payer: getAddress(auth.from),
    token: getAddress(auth.permitted.token),
    permitted,
    amount,
    nonce,
    deadline,
    to: getAddress(auth.witness.to),
    validAfter,
    facilitator: auth.witness.facilitator ? getAddress(auth.witness.facilitator) : undefined,
    signature: parsed.data.signature as Hex,
  };
  const key: SettlementKey = { network, asset: PERMIT2_ADDRESS, payer: payment.payer, nonce: nonceHex(nonce) };
  return { ok: true, payment, key };
}

export const nonceHex = (nonce: bigint): string => toHex(nonce, { size: 32 }).toLowerCase();

/** The proxy this kind must be signed for. */
export const proxyOf = (kind: Permit2Kind): Address => (kind === 'permit2-upto' ? UPTO_PERMIT2_PROXY : EXACT_PERMIT2_PROXY);

/** Tells a retry of this payment from another payload reusing its nonce (and, for upto, from a settle of another amount). */
export function permit2PayloadHash(key: SettlementKey, requirements: PaymentRequirements, p: Permit2Payment): string {
  const fields = [p.kind, key.network, p.proxy, p.payer, p.token, p.permitted, p.amount, p.nonce, p.deadline, p.to, p.validAfter, p.facilitator ?? '', p.signature, getAddress(requirements.payTo)];
  return keccak256Text(JSON.stringify(fields.map((v) => String(v).toLowerCase())));
}

/** The proxy call a settle sends: `settle(permit, [amount,] owner, witness, signature)`. */
export function settleCallData(p: Permit2Payment): Hex {
  // An ERC-6492 wrapper is for counterfactual wallets, which this facilitator does not deploy: the inner signature.
  const { signature } = parseErc6492Signature(p.signature);
  const permit = { permitted: { token: p.token, amount: p.permitted }, nonce: p.nonce, deadline: p.deadline };
  if (p.kind === 'permit2-upto') {
    return encodeFunctionData({
      abi: x402UptoPermit2ProxyABI,
      functionName: 'settle',
      args: [permit, p.amount, p.payer, { to: p.to, facilitator: p.facilitator!, validAfter: p.validAfter }, signature],
    });
  }
  return encodeFunctionData({ abi: x402ExactPermit2ProxyABI, functionName: 'settle', args: [permit, p.payer, { to: p.to, validAfter: p.validAfter }, signature] });
}
