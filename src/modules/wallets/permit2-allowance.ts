import type { PaymentRequirements } from '@x402/core/types';
import { getAddress, parseAbi, type Address, type PublicClient } from 'viem';
import { PERMIT2_ADDRESS } from '../../chain/x402-contracts.js';
import { conflict } from '../../platform/http/errors.js';

const erc20 = parseAbi(['function allowance(address owner, address spender) view returns (uint256)']);

/**
 * An `upto` permit moves tokens through Permit2, which can pull only what the wallet approved it for. Without that
 * allowance the permit would be signed, sent and refused by every facilitator: refused here instead, before anything
 * is reserved or signed (409 permit2_not_approved). Only our own chain can be read; elsewhere the facilitator judges.
 */
export async function refuseWithoutPermit2Allowance(client: PublicClient, network: string, wallet: Address, requirement: PaymentRequirements): Promise<void> {
  if (requirement.scheme !== 'upto' || requirement.network !== network) return;
  const allowance = await client.readContract({ address: getAddress(requirement.asset), abi: erc20, functionName: 'allowance', args: [wallet, PERMIT2_ADDRESS] });
  if (allowance >= BigInt(requirement.amount)) return;
  throw conflict(
    `The upstream asks for an upto payment through Permit2, and the wallet has approved Permit2 (${PERMIT2_ADDRESS}) for ${allowance} of ${requirement.asset}, less than the maximum ${requirement.amount}; nothing was signed. Approve it with POST /v1/wallets/me/permit2-approval`,
    'permit2_not_approved',
    { reason: 'permit2_not_approved', allowance: allowance.toString(), spender: PERMIT2_ADDRESS },
  );
}
