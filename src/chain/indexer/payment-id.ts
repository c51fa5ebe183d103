import { encodeAbiParameters, getAddress, keccak256, type Address, type Hex } from 'viem';

/**
 * The payment's consumption key: keccak256(abi.encode(uint256 chainId, address token,
 * address authorizer, bytes32 nonce)). An EIP-3009 nonce is single-use per (token, authorizer) on a
 * chain, so this names one payment forever, whichever transaction or block carried it.
 */
export function paymentIdOf(chainId: number, token: Address, authorizer: Address, nonce: Hex): Hex {
  return keccak256(
    encodeAbiParameters(
      [{ type: 'uint256' }, { type: 'address' }, { type: 'address' }, { type: 'bytes32' }],
      [BigInt(chainId), getAddress(token), getAddress(authorizer), nonce],
    ),
  );
}
