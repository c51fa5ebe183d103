// USDG stand-in on a real devchain: metadata, EIP-3009 (incl. Paxos's no-revert replay quirk),
// EIP-1271 contract signers and EIP-2612 permit. Reverts are checked twice: the decoded error of an
// eth_call, and a mined transaction (explicit gas, no estimation) whose receipt says "reverted".
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  BaseError,
  createPublicClient,
  createWalletClient,
  decodeErrorResult,
  encodeFunctionData,
  getTypesForEIP712Domain,
  hashDomain,
  http,
  parseEventLogs,
  parseSignature,
  parseUnits,
  serializeSignature,
  toHex,
  type Address,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
  type WalletClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSolidity } from '../../scripts/compile-contracts.mjs';
import { devchainChain, startEphemeralDevchain, USDG_ADDRESS, type Devchain } from '../../src/chain/devchain.js';
import { transferWithAuthorizationTypes } from '../../src/chain/eip3009.js';
import { usdgAbi } from '../../src/chain/usdg-artifact.js';

// Contracts on a devchain, no database: the PostgreSQL pass would run them again unchanged.
const noDatabaseTestOnPostgresPass = Boolean(process.env.DATABASE_URL);

const domain = { name: 'Global Dollar', version: '1', chainId: 4663, verifyingContract: USDG_ADDRESS } as const;
// receiveWithAuthorization signs the same fields under another type name.
const authFields = transferWithAuthorizationTypes.TransferWithAuthorization;
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const usdg = (amount: string): bigint => parseUnits(amount, 6);

interface Auth {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}
type AuthFn = 'transferWithAuthorization' | 'receiveWithAuthorization';

let chain: Devchain;
let pub: PublicClient;
let wallet: WalletClient;
let relayer: PrivateKeyAccount;

beforeAll(async () => {
  chain = await startEphemeralDevchain();
  const config = { chain: devchainChain(chain.rpcUrl), transport: http(chain.rpcUrl), pollingInterval: 50 };
  pub = createPublicClient(config);
  wallet = createWalletClient(config);
  relayer = privateKeyToAccount(generatePrivateKey());
  await chain.fundGas(relayer.address);
}, 30_000);

afterAll(async () => {
  await chain?.stop();
});

const newAccount = (): PrivateKeyAccount => privateKeyToAccount(generatePrivateKey());
const randomNonce = (): Hex => toHex(randomBytes(32));
const balance = (a: Address): Promise<bigint> => chain.balanceOf(a);
const authState = (authorizer: Address, nonce: Hex): Promise<boolean> =>
  pub.readContract({ address: USDG_ADDRESS, abi: usdgAbi, functionName: 'authorizationState', args: [authorizer, nonce] });
const latestTimestamp = async (): Promise<bigint> => (await pub.getBlock()).timestamp;

async function authFor(from: Address, to: Address, value: bigint, window: Partial<Auth> = {}): Promise<Auth> {
  const now = await latestTimestamp();
  return { from, to, value, validAfter: 0n, validBefore: now + 3600n, nonce: randomNonce(), ...window };
}

function signAuth(signer: PrivateKeyAccount, auth: Auth, fn: AuthFn = 'transferWithAuthorization'): Promise<Hex> {
  if (fn === 'receiveWithAuthorization') {
    return signer.signTypedData({
      domain,
      types: { ReceiveWithAuthorization: authFields },
      primaryType: 'ReceiveWithAuthorization',
      message: auth,
    });
  }
  return signer.signTypedData({
    domain,
    types: { TransferWithAuthorization: authFields },
    primaryType: 'TransferWithAuthorization',
    message: auth,
  });
}

function authData(auth: Auth, signature: Hex, form: 'vrs' | 'bytes', fn: AuthFn = 'transferWithAuthorization'): Hex {
  const { from, to, value, validAfter, validBefore, nonce } = auth;
  if (form === 'bytes') {
    return encodeFunctionData({
      abi: usdgAbi,
      functionName: fn,
      args: [from, to, value, validAfter, validBefore, nonce, signature],
    });
  }
  const { v, r, s } = parseSignature(signature);
  return encodeFunctionData({
    abi: usdgAbi,
    functionName: fn,
    args: [from, to, value, validAfter, validBefore, nonce, Number(v), r, s],
  });
}

/** Sends with a fixed gas limit so a reverting call is still mined (no estimateGas short-circuit). */
async function send(data: Hex, from: PrivateKeyAccount = relayer): Promise<TransactionReceipt> {
  const hash = await wallet.sendTransaction({ account: from, to: USDG_ADDRESS, data, gas: 1_000_000n, chain: null });
  return pub.waitForTransactionReceipt({ hash });
}

function events(receipt: TransactionReceipt) {
  return parseEventLogs({ abi: usdgAbi, logs: receipt.logs });
}

async function expectRevert(data: Hex, errorName: string, from: PrivateKeyAccount = relayer): Promise<void> {
  let revertData: Hex | undefined;
  try {
    await pub.call({ account: from.address, to: USDG_ADDRESS, data });
  } catch (err) {
    const found = err instanceof BaseError ? err.walk((e) => typeof (e as { data?: unknown }).data === 'string') : null;
    revertData = (found as { data?: Hex } | null)?.data;
  }
  expect(revertData, `expected ${errorName}`).toBeDefined();
  expect(decodeErrorResult({ abi: usdgAbi, data: revertData! }).errorName).toBe(errorName);
  const receipt = await send(data, from);
  expect(receipt.status).toBe('reverted');
}

/** A fresh EOA holding `amount` USDG. */
async function funded(amount: string): Promise<PrivateKeyAccount> {
  const account = newAccount();
  await chain.fund(account.address, amount);
  return account;
}

describe.skipIf(noDatabaseTestOnPostgresPass)('USDG metadata', () => {
  it('has the USDG name, symbol, decimals and EIP-712 domain', async () => {
    const read = <F extends 'name' | 'symbol' | 'decimals' | 'version' | 'DOMAIN_SEPARATOR'>(functionName: F) =>
      pub.readContract({ address: USDG_ADDRESS, abi: usdgAbi, functionName });
    expect(await read('name')).toBe('Global Dollar');
    expect(await read('symbol')).toBe('USDG');
    expect(await read('decimals')).toBe(6);
    expect(await read('version')).toBe('1');
    const EIP712Domain = [
      { name: 'name', type: 'string' },
      { name: 'version', type: 'string' },
      { name: 'chainId', type: 'uint256' },
      { name: 'verifyingContract', type: 'address' },
    ] as const;
    expect(getTypesForEIP712Domain({ domain })).toEqual(EIP712Domain);
    const expected = hashDomain({ domain: { ...domain, chainId: BigInt(domain.chainId) }, types: { EIP712Domain } });
    expect(await read('DOMAIN_SEPARATOR')).toBe(expected);
  });

  it('only lets the minter mint and initialize only once', async () => {
    const stranger = newAccount();
    await chain.fundGas(stranger.address);
    const mint = encodeFunctionData({ abi: usdgAbi, functionName: 'mint', args: [stranger.address, 1n] });
    await expectRevert(mint, 'OnlyMinter', stranger);
    await expectRevert(
      encodeFunctionData({ abi: usdgAbi, functionName: 'initialize', args: [stranger.address] }),
      'AlreadyInitialized',
      stranger,
    );
  });
});

describe.skipIf(noDatabaseTestOnPostgresPass)('transferWithAuthorization', () => {
  for (const form of ['vrs', 'bytes'] as const) {
    it(`moves funds and logs Transfer + AuthorizationUsed (${form} signature)`, async () => {
      const payer = await funded('10');
      const payee = newAccount().address;
      const auth = await authFor(payer.address, payee, usdg('1.5'));
      const receipt = await send(authData(auth, await signAuth(payer, auth), form));
      expect(receipt.status).toBe('success');
      const logs = events(receipt);
      expect(logs.map((l) => l.eventName)).toEqual(['AuthorizationUsed', 'Transfer']);
      expect(logs[0]?.args).toEqual({ authorizer: payer.address, nonce: auth.nonce });
      expect(logs[1]?.args).toEqual({ from: payer.address, to: payee, value: usdg('1.5') });
      expect(await balance(payer.address)).toBe(usdg('8.5'));
      expect(await balance(payee)).toBe(usdg('1.5'));
      expect(await authState(payer.address, auth.nonce)).toBe(true);
    });
  }

  it('does not revert on a reused nonce: emits AuthorizationAlreadyUsed and moves nothing', async () => {
    const payer = await funded('10');
    const payee = newAccount().address;
    const auth = await authFor(payer.address, payee, usdg('2'));
    const data = authData(auth, await signAuth(payer, auth), 'vrs');
    expect((await send(data)).status).toBe('success');

    const replay = await send(data);
    expect(replay.status).toBe('success');
    const logs = events(replay);
    expect(logs.map((l) => l.eventName)).toEqual(['AuthorizationAlreadyUsed']);
    expect(logs[0]?.args).toEqual({ authorizer: payer.address, nonce: auth.nonce });
    expect(await balance(payer.address)).toBe(usdg('8'));
    expect(await balance(payee)).toBe(usdg('2'));
  });

  it('reverts outside the validity window', async () => {
    const payer = await funded('10');
    const now = await latestTimestamp();
    const expired = await authFor(payer.address, newAccount().address, 1n, { validBefore: now });
    await expectRevert(authData(expired, await signAuth(payer, expired), 'vrs'), 'AuthorizationExpired');
    const window = { validAfter: now + 3600n, validBefore: now + 7200n };
    const early = await authFor(payer.address, newAccount().address, 1n, window);
    await expectRevert(authData(early, await signAuth(payer, early), 'bytes'), 'AuthorizationInvalid');
    expect(await balance(payer.address)).toBe(usdg('10'));
  });

  it('reverts on a bad signature', async () => {
    const payer = await funded('10');
    const auth = await authFor(payer.address, newAccount().address, usdg('1'));
    await expectRevert(authData(auth, await signAuth(newAccount(), auth), 'vrs'), 'InvalidSignature');
    const tampered = { ...auth, value: usdg('5') };
    await expectRevert(authData(tampered, await signAuth(payer, auth), 'bytes'), 'InvalidSignature');
    // The malleable twin (n - s, flipped v) recovers the same signer but must be refused (EIP-2).
    const { r, s, v } = parseSignature(await signAuth(payer, auth));
    const twin = serializeSignature({ r, s: toHex(SECP256K1_N - BigInt(s), { size: 32 }), v: v === 27n ? 28n : 27n });
    await expectRevert(authData(auth, twin, 'bytes'), 'InvalidSignature');
    expect(await balance(payer.address)).toBe(usdg('10'));
  });

  it('reverts on insufficient balance and leaves the nonce unused', async () => {
    const payer = await funded('1');
    const auth = await authFor(payer.address, newAccount().address, usdg('5'));
    await expectRevert(authData(auth, await signAuth(payer, auth), 'vrs'), 'InsufficientFunds');
    expect(await authState(payer.address, auth.nonce)).toBe(false);
    expect(await balance(payer.address)).toBe(usdg('1'));
  });
});

describe.skipIf(noDatabaseTestOnPostgresPass)('receiveWithAuthorization', () => {
  it('works for the payee and reverts for anyone else', async () => {
    const payer = await funded('10');
    const payee = newAccount();
    await chain.fundGas(payee.address);
    const auth = await authFor(payer.address, payee.address, usdg('3'));
    const signature = await signAuth(payer, auth, 'receiveWithAuthorization');
    for (const form of ['vrs', 'bytes'] as const) {
      await expectRevert(authData(auth, signature, form, 'receiveWithAuthorization'), 'CallerMustBePayee', relayer);
    }
    // A TransferWithAuthorization signature is not valid for receive (different type hash).
    const wrongType = await signAuth(payer, auth, 'transferWithAuthorization');
    await expectRevert(authData(auth, wrongType, 'bytes', 'receiveWithAuthorization'), 'InvalidSignature', payee);

    const receipt = await send(authData(auth, signature, 'bytes', 'receiveWithAuthorization'), payee);
    expect(events(receipt).map((l) => l.eventName)).toEqual(['AuthorizationUsed', 'Transfer']);
    expect(await balance(payee.address)).toBe(usdg('3'));
  });
});

describe.skipIf(noDatabaseTestOnPostgresPass)('cancelAuthorization', () => {
  for (const form of ['vrs', 'bytes'] as const) {
    it(`cancels a nonce; using it afterwards moves nothing (${form} signature)`, async () => {
      const payer = await funded('10');
      const payee = newAccount().address;
      const auth = await authFor(payer.address, payee, usdg('1'));
      const cancelSig = await payer.signTypedData({
        domain,
        types: { CancelAuthorization: [{ name: 'authorizer', type: 'address' }, { name: 'nonce', type: 'bytes32' }] },
        primaryType: 'CancelAuthorization',
        message: { authorizer: payer.address, nonce: auth.nonce },
      });
      const { v, r, s } = parseSignature(cancelSig);
      const functionName = 'cancelAuthorization';
      const cancel =
        form === 'bytes'
          ? encodeFunctionData({ abi: usdgAbi, functionName, args: [payer.address, auth.nonce, cancelSig] })
          : encodeFunctionData({ abi: usdgAbi, functionName, args: [payer.address, auth.nonce, Number(v), r, s] });
      const canceled = await send(cancel);
      expect(events(canceled).map((l) => l.eventName)).toEqual(['AuthorizationCanceled']);

      const used = await send(authData(auth, await signAuth(payer, auth), form));
      expect(used.status).toBe('success');
      expect(events(used).map((l) => l.eventName)).toEqual(['AuthorizationAlreadyUsed']);
      expect(await balance(payer.address)).toBe(usdg('10'));
      expect(await balance(payee)).toBe(0n);
    });
  }
});

describe.skipIf(noDatabaseTestOnPostgresPass)('EIP-1271 contract signer', () => {
  let walletAddress: Address;
  let owner: PrivateKeyAccount;

  beforeAll(async () => {
    const source = readFileSync(new URL('../../contracts/test/ERC1271Wallet.sol', import.meta.url), 'utf8');
    const compiled = compileSolidity({ 'ERC1271Wallet.sol': source }).ERC1271Wallet;
    if (!compiled) throw new Error('ERC1271Wallet not compiled');
    owner = newAccount();
    const hash = await wallet.deployContract({
      account: relayer,
      chain: null,
      abi: [{ type: 'constructor', stateMutability: 'nonpayable', inputs: [{ name: 'owner_', type: 'address' }] }],
      bytecode: compiled.bytecode,
      args: [owner.address],
    });
    const receipt = await pub.waitForTransactionReceipt({ hash });
    if (!receipt.contractAddress) throw new Error('deploy failed');
    walletAddress = receipt.contractAddress;
    await chain.fund(walletAddress, '10');
  }, 30_000);

  it('accepts the owner signature (bytes and v,r,s forms) and rejects others', async () => {
    const payee = newAccount().address;
    const auth = await authFor(walletAddress, payee, usdg('4'));
    await expectRevert(authData(auth, await signAuth(newAccount(), auth), 'bytes'), 'InvalidSignature');

    const receipt = await send(authData(auth, await signAuth(owner, auth), 'bytes'));
    expect(events(receipt).map((l) => l.eventName)).toEqual(['AuthorizationUsed', 'Transfer']);
    const again = await authFor(walletAddress, payee, usdg('1'));
    expect((await send(authData(again, await signAuth(owner, again), 'vrs'))).status).toBe('success');
    expect(await balance(walletAddress)).toBe(usdg('5'));
    expect(await balance(payee)).toBe(usdg('5'));
  });
});

describe.skipIf(noDatabaseTestOnPostgresPass)('permit (EIP-2612)', () => {
  it('sets an allowance from a signature, bumps the nonce, rejects replay and expiry', async () => {
    const owner = await funded('10');
    const spender = newAccount();
    await chain.fundGas(spender.address);
    const deadline = (await latestTimestamp()) + 3600n;
    const signPermit = (value: bigint, nonce: bigint, dl: bigint) =>
      owner.signTypedData({
        domain,
        types: {
          Permit: [
            { name: 'owner', type: 'address' },
            { name: 'spender', type: 'address' },
            { name: 'value', type: 'uint256' },
            { name: 'nonce', type: 'uint256' },
            { name: 'deadline', type: 'uint256' },
          ],
        },
        primaryType: 'Permit',
        message: { owner: owner.address, spender: spender.address, value, nonce, deadline: dl },
      });
    const sig = await signPermit(usdg('6'), 0n, deadline);
    const { v, r, s } = parseSignature(sig);
    const permit = encodeFunctionData({
      abi: usdgAbi,
      functionName: 'permit',
      args: [owner.address, spender.address, usdg('6'), deadline, Number(v), r, s],
    });
    const receipt = await send(permit);
    expect(events(receipt).map((l) => l.eventName)).toEqual(['Approval']);
    const token = { address: USDG_ADDRESS, abi: usdgAbi } as const;
    const allowed = await pub.readContract({ ...token, functionName: 'allowance', args: [owner.address, spender.address] });
    expect(allowed).toBe(usdg('6'));
    expect(await pub.readContract({ ...token, functionName: 'nonces', args: [owner.address] })).toBe(1n);
    await expectRevert(permit, 'InvalidSignature');

    const pullArgs = [owner.address, spender.address, usdg('6')] as const;
    const pull = encodeFunctionData({ abi: usdgAbi, functionName: 'transferFrom', args: pullArgs });
    expect((await send(pull, spender)).status).toBe('success');
    expect(await balance(spender.address)).toBe(usdg('6'));

    const past = (await latestTimestamp()) - 1n;
    const late = await signPermit(1n, 1n, past);
    await expectRevert(
      encodeFunctionData({ abi: usdgAbi, functionName: 'permit', args: [owner.address, spender.address, 1n, past, late] }),
      'PermitExpired',
    );
  });
});
