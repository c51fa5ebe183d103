// Permit2 payments for the facilitator tests: payers that approved Permit2, payloads made by the official
// @x402/evm clients (exact with assetTransferMethod permit2, upto), and the chain evidence (the payer's
// transfers, the relayer's sends and gas).
import { randomBytes } from 'node:crypto';
import { x402Client } from '@x402/core/client';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { permit2WitnessTypes, uptoPermit2WitnessTypes } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { UptoEvmScheme } from '@x402/evm/upto/client';
import { createWalletClient, getAddress, http, maxUint256, parseAbi, toHex, type Address, type Hash, type LocalAccount } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { EXACT_PERMIT2_PROXY, PERMIT2_ADDRESS, UPTO_PERMIT2_PROXY } from '../../src/chain/x402-contracts.js';
import type { TestApp } from '../helpers/test-app.js';
import { fundedPayer } from '../x402/support.js';

export const NETWORK = 'eip155:4663';
const erc20 = parseAbi(['function approve(address spender, uint256 value) returns (bool)', 'event Transfer(address indexed from, address indexed to, uint256 value)']);

/** A funded payer (USDG and gas) that approved Permit2 for USDG, as the Permit2 flow asks once per token. */
export async function permit2Payer(app: TestApp, usdg = '1'): Promise<PrivateKeyAccount> {
  const payer = await fundedPayer(app, usdg);
  await approvePermit2(app, payer);
  return payer;
}

export async function approvePermit2(app: TestApp, payer: LocalAccount, amount = maxUint256): Promise<void> {
  const wallet = createWalletClient({ account: payer, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
  const hash = await wallet.writeContract({ address: app.ctx.chain.asset.address, abi: erc20, functionName: 'approve', args: [PERMIT2_ADDRESS, amount] });
  await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash });
}

/** Requirements for `scheme` over Permit2 as an official server builds them (upto carries the facilitator to name). */
export function permit2Requirements(app: TestApp, scheme: 'exact' | 'upto', amount: string, payTo: Address, facilitatorAddress?: Address): PaymentRequirements {
  const base = app.ctx.x402.requirements({ url: 'http://test/resource', description: 'test', mimeType: 'application/json', amount, payTo });
  const extra = { ...base.extra, assetTransferMethod: 'permit2', ...(scheme === 'upto' ? { facilitatorAddress: facilitatorAddress ?? app.ctx.chain.relayers[0]!.address } : {}) };
  return { ...base, scheme, extra };
}

/** A payment made by the official client scheme (`ExactEvmScheme` routes on extra.assetTransferMethod; `UptoEvmScheme`). */
export async function officialPayment(payer: LocalAccount, requirements: PaymentRequirements): Promise<PaymentPayload> {
  const scheme = requirements.scheme === 'upto' ? new UptoEvmScheme(payer as never) : new ExactEvmScheme(payer as never);
  const client = x402Client.fromConfig({
    schemes: [{ network: NETWORK, client: scheme }],
    spendControls: { allowedAssets: [{ network: NETWORK, asset: requirements.asset, maxAmountPerPayment: '100000000' }] },
  });
  return client.createPaymentPayload({ x402Version: 2, resource: { url: 'http://test/resource', description: 'test', mimeType: 'application/json' }, accepts: [requirements] } as never);
}

export interface PermitOverrides {
  nonce?: bigint;
  amount?: bigint;
  to?: Address;
  facilitator?: Address;
  deadline?: bigint;
  signer?: LocalAccount;
}

/** A permit signed by hand (the bad ones an official client never makes), `accepted` echoing the requirements. */
export async function signPermit(payer: LocalAccount, requirements: PaymentRequirements, o: PermitOverrides = {}): Promise<PaymentPayload> {
  const upto = requirements.scheme === 'upto';
  const now = BigInt(Math.floor(Date.now() / 1000));
  const auth = {
    from: payer.address,
    permitted: { token: getAddress(requirements.asset), amount: (o.amount ?? BigInt(requirements.amount)).toString() },
    spender: upto ? UPTO_PERMIT2_PROXY : EXACT_PERMIT2_PROXY,
    nonce: (o.nonce ?? BigInt(toHex(randomBytes(31)))).toString(),
    deadline: (o.deadline ?? now + BigInt(requirements.maxTimeoutSeconds)).toString(),
    witness: {
      to: o.to ?? getAddress(requirements.payTo),
      ...(upto ? { facilitator: o.facilitator ?? getAddress((requirements.extra as { facilitatorAddress: string }).facilitatorAddress) } : {}),
      validAfter: '0',
    },
  };
  const message = {
    permitted: { token: auth.permitted.token, amount: BigInt(auth.permitted.amount) },
    spender: auth.spender,
    nonce: BigInt(auth.nonce),
    deadline: BigInt(auth.deadline),
    witness: upto ? { to: auth.witness.to, facilitator: (auth.witness as { facilitator: Address }).facilitator, validAfter: 0n } : { to: auth.witness.to, validAfter: 0n },
  };
  const signature = await (o.signer ?? payer).signTypedData({
    domain: { name: 'Permit2', chainId: 4663, verifyingContract: PERMIT2_ADDRESS },
    types: upto ? uptoPermit2WitnessTypes : permit2WitnessTypes,
    primaryType: 'PermitWitnessTransferFrom',
    message,
  } as never);
  return { x402Version: 2, accepted: requirements, payload: { signature, permit2Authorization: auth } } as PaymentPayload;
}

export const permitNonce = (payload: PaymentPayload): bigint => BigInt((payload.payload as { permit2Authorization: { nonce: string } }).permit2Authorization.nonce);

/** The USDG transfers from `payer` to `payTo` in the chain's logs (all of them). */
export async function transfersTo(app: TestApp, payer: Address, payTo: Address): Promise<Array<{ tx: Hash; value: bigint }>> {
  const logs = await app.ctx.chain.publicClient.getLogs({ address: app.ctx.chain.asset.address, event: erc20[1], args: { from: payer, to: payTo }, fromBlock: 0n });
  return logs.map((l) => ({ tx: l.transactionHash, value: l.args.value! }));
}

/** What the relayer keys hold together and have sent. */
export async function relayerState(app: TestApp): Promise<{ wei: bigint; sent: number }> {
  const client = app.ctx.chain.publicClient;
  const keys = app.ctx.chain.relayers.map((key) => key.address);
  const balances = await Promise.all(keys.map((address) => client.getBalance({ address })));
  const counts = await Promise.all(keys.map((address) => client.getTransactionCount({ address })));
  return { wei: balances.reduce((a, b) => a + b, 0n), sent: counts.reduce((a, b) => a + b, 0) };
}

/** The gas limit, use and sender of `hash`. */
export async function gasOf(app: TestApp, hash: Hash): Promise<{ limit: bigint; used: bigint; from: Address; to: Address; cost: bigint }> {
  const [tx, receipt] = await Promise.all([app.ctx.chain.publicClient.getTransaction({ hash }), app.ctx.chain.publicClient.getTransactionReceipt({ hash })]);
  return { limit: tx.gas, used: receipt.gasUsed, from: getAddress(tx.from), to: getAddress(tx.to!), cost: receipt.gasUsed * receipt.effectiveGasPrice };
}

/** A payer nobody funded (for the cases where the money is not the point). */
export const strangerKey = (): PrivateKeyAccount => privateKeyToAccount(generatePrivateKey());
