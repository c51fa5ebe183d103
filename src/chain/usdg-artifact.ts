// The compiled devchain USDG token. Runtime bytecode comes from contracts/USDG.json (the committed
// artifact); the ABI is written out here in human-readable form because a JSON import cannot give
// viem literal types. test/contracts/artifact.test.ts fails if the two ABIs ever differ.
import { readFileSync } from 'node:fs';
import { parseAbi, type Abi, type Hex } from 'viem';
import { projectPath } from '../platform/project-root.js';

export const usdgAbi = parseAbi([
  'error AlreadyInitialized()',
  'error AuthorizationExpired()',
  'error AuthorizationInvalid()',
  'error CallerMustBePayee()',
  'error InsufficientAllowance()',
  'error InsufficientFunds()',
  'error InvalidSignature()',
  'error OnlyMinter()',
  'error PermitExpired()',
  'error ZeroAddress()',
  'event Approval(address indexed owner, address indexed spender, uint256 value)',
  'event AuthorizationAlreadyUsed(address indexed authorizer, bytes32 indexed nonce)',
  'event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
  'event MinterSet(address indexed minter)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'function CANCEL_AUTHORIZATION_TYPEHASH() view returns (bytes32)',
  'function DOMAIN_SEPARATOR() view returns (bytes32)',
  'function EIP712_DOMAIN_TYPEHASH() view returns (bytes32)',
  'function PERMIT_TYPEHASH() view returns (bytes32)',
  'function RECEIVE_WITH_AUTHORIZATION_TYPEHASH() view returns (bytes32)',
  'function TRANSFER_WITH_AUTHORIZATION_TYPEHASH() view returns (bytes32)',
  'function allowance(address owner, address spender) view returns (uint256)',
  'function approve(address spender, uint256 value) returns (bool)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'function balanceOf(address account) view returns (uint256)',
  'function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'function cancelAuthorization(address authorizer, bytes32 nonce, bytes signature)',
  'function decimals() view returns (uint8)',
  'function initialize(address minter_)',
  'function mint(address to, uint256 amount)',
  'function minter() view returns (address)',
  'function name() view returns (string)',
  'function nonces(address owner) view returns (uint256)',
  'function permit(address owner, address spender, uint256 value, uint256 deadline, bytes signature)',
  'function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)',
  'function receiveWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
  'function receiveWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'function symbol() view returns (string)',
  'function totalSupply() view returns (uint256)',
  'function transfer(address to, uint256 value) returns (bool)',
  'function transferFrom(address from, address to, uint256 value) returns (bool)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'function version() view returns (string)',
]);

export type UsdgAbi = typeof usdgAbi;

export interface UsdgArtifactJson {
  contractName: string;
  abi: Abi;
  bytecode: Hex;
  deployedBytecode: Hex;
  sourceHash: string;
}

export const usdgArtifactPath: string = projectPath('contracts', 'USDG.json');
export const usdgArtifact: UsdgArtifactJson = JSON.parse(readFileSync(usdgArtifactPath, 'utf8')) as UsdgArtifactJson;
export const usdgDeployedBytecode: Hex = usdgArtifact.deployedBytecode;
