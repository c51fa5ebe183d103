// Shared by the x402 and facilitator tests: funded payers, hand-signed authorizations (to build
// the bad payments a well-behaved client never makes), and on-chain evidence (Transfer logs).
import { randomBytes } from 'node:crypto';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { authorizationTypes } from '@x402/evm';
import { createWalletClient, getAddress, http, parseSignature, toHex, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { adminCommands } from '../../src/admin/commands.js';
import { eip3009Abi } from '../../src/chain/eip3009.js';
import type { TestApp } from '../helpers/test-app.js';

/** A fresh key funded through the `dev.fund` admin command (what `tollgate dev fund` runs). */
export async function fundedPayer(app: TestApp, amount = '1'): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey());
  await adminCommands(app.ctx, app.modules)['dev.fund']({ address: account.address, amount });
  return account;
}

export const randomAddress = (): Address => privateKeyToAccount(generatePrivateKey()).address;

export interface AuthorizationOverrides {
  value?: string;
  to?: Address;
  validAfter?: bigint;
  validBefore?: bigint;
  nonce?: Hex;
  /** Sign under another token's EIP-712 domain. */
  verifyingContract?: Address;
  /** Sign with another key than the payer's. */
  signer?: PrivateKeyAccount;
}

/** An exact-EVM payment for `requirements` signed by hand; `accepted` always echoes the requirements. */
export async function signAuthorization(
  payer: PrivateKeyAccount,
  requirements: PaymentRequirements,
  overrides: AuthorizationOverrides = {},
  resource?: PaymentPayload['resource'],
): Promise<PaymentPayload> {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const authorization = {
    from: payer.address,
    to: overrides.to ?? getAddress(requirements.payTo),
    value: BigInt(overrides.value ?? requirements.amount),
    validAfter: overrides.validAfter ?? 0n,
    validBefore: overrides.validBefore ?? now + BigInt(requirements.maxTimeoutSeconds),
    nonce: overrides.nonce ?? toHex(randomBytes(32)),
  };
  const extra = requirements.extra as { name: string; version: string };
  const signature = await (overrides.signer ?? payer).signTypedData({
    domain: {
      name: extra.name,
      version: extra.version,
      chainId: Number(requirements.network.split(':')[1]),
      verifyingContract: overrides.verifyingContract ?? getAddress(requirements.asset),
    },
    types: authorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  });
  return {
    x402Version: 2,
    ...(resource ? { resource } : {}),
    accepted: requirements,
    payload: {
      signature,
      authorization: {
        ...authorization,
        value: authorization.value.toString(),
        validAfter: authorization.validAfter.toString(),
        validBefore: authorization.validBefore.toString(),
      },
    },
  };
}

export const nonceOf = (payload: PaymentPayload) => (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;

/**
 * Every Transfer this authorization made: per AuthorizationUsed log of it, the token's Transfer from the payer
 * right after it (a settlement batch carries other payers' transfers beside it, which are not this one's).
 */
export async function transfersForNonce(app: TestApp, payer: Address, nonce: Hex): Promise<number> {
  const client = app.ctx.chain.publicClient;
  const asset = app.ctx.chain.asset.address;
  const used = await client.getContractEvents({ address: asset, abi: eip3009Abi, eventName: 'AuthorizationUsed', args: { authorizer: payer, nonce }, fromBlock: 0n });
  let transfers = 0;
  for (const log of used) {
    const receipt = await client.getTransactionReceipt({ hash: log.transactionHash });
    transfers += receipt.logs.filter(
      (l) => l.address.toLowerCase() === asset.toLowerCase() && l.topics[0] === TRANSFER_TOPIC && l.logIndex === log.logIndex + 1 && BigInt(l.topics[1]!) === BigInt(payer),
    ).length;
  }
  return transfers;
}

/** keccak256("Transfer(address,address,uint256)"): the ERC-20 Transfer log's first topic. */
export const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

export const balanceOf = (app: TestApp, address: Address) => app.ctx.chain.devchain!.balanceOf(address);

/** The relayer's transaction count: unchanged means nothing was broadcast. */
export const relayerTxCount = (app: TestApp, address: Address) => app.ctx.chain.publicClient.getTransactionCount({ address });

/** Someone else executes the authorization: an outsider sends transferWithAuthorization itself (explicit gas: no estimation). */
export async function executeElsewhere(app: TestApp, payload: PaymentPayload) {
  const outsider = await fundedPayer(app, '0');
  const { authorization: a, signature } = payload.payload as { authorization: Record<string, string>; signature: Hex };
  const { v, r, s } = parseSignature(signature);
  const wallet = createWalletClient({ account: outsider, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
  const hash = await wallet.writeContract({
    address: app.ctx.chain.asset.address,
    abi: eip3009Abi,
    functionName: 'transferWithAuthorization',
    args: [a.from as Hex, a.to as Hex, BigInt(a.value), BigInt(a.validAfter), BigInt(a.validBefore), a.nonce as Hex, Number(v), r, s],
    gas: 200_000n,
  });
  return app.ctx.chain.publicClient.waitForTransactionReceipt({ hash });
}
