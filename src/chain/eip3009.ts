// The EIP-3009 surface Tollgate reads on any token it accepts (USDG and its devchain stand-in).
import { parseAbi } from 'viem';

export const eip3009Abi = parseAbi([
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
  'event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)',
  // USDG quirk: a reused nonce emits this instead of reverting, and moves nothing.
  'event AuthorizationAlreadyUsed(address indexed authorizer, bytes32 indexed nonce)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'function balanceOf(address account) view returns (uint256)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
  // Custom errors of the devchain token, so reverts decode to names instead of raw selectors.
  'error AuthorizationInvalid()',
  'error AuthorizationExpired()',
  'error InsufficientFunds()',
  'error InvalidSignature()',
  'error ZeroAddress()',
]);

/** EIP-712 types of an EIP-3009 transfer authorization (the domain is the token's: name, version, chainId, address). */
export const transferWithAuthorizationTypes = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;
