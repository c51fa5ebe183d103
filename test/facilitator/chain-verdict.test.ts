// chainVerdict decides an open settlement from the chain alone. An authorization the chain reports used
// but whose logs the RPC does not return (a load-balanced RPC whose log backend lags) is not a verdict: a
// "failed" there would record as failed a transfer that moved. Only a found cancellation fails it.
import { randomBytes } from 'node:crypto';
import { createPublicClient, createWalletClient, custom, http, parseAbi, toHex, type Hex, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devchainChain, DEVCHAIN_CHAIN_ID, startEphemeralDevchain, USDG_ADDRESS, type Devchain } from '../../src/chain/devchain.js';
import { transferWithAuthorizationTypes } from '../../src/chain/eip3009.js';
import { chainVerdict } from '../../src/x402/facilitator/chain-verdict.js';
import type { SettlementRow } from '../../src/x402/tables.js';

const usdg = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
  'function cancelAuthorization(address authorizer, bytes32 nonce, bytes signature)',
]);
const domain = { name: 'Global Dollar', version: '1', chainId: DEVCHAIN_CHAIN_ID, verifyingContract: USDG_ADDRESS } as const;

let chain: Devchain;
let client: PublicClient;
/** The same chain through an RPC whose eth_getLogs answers an empty list, as a lagging log backend does. */
let lagging: PublicClient;
const relayer = privateKeyToAccount(generatePrivateKey());

beforeAll(async () => {
  chain = await startEphemeralDevchain();
  client = createPublicClient({ chain: devchainChain(chain.rpcUrl), transport: http(chain.rpcUrl) });
  const upstream = http(chain.rpcUrl)({ chain: devchainChain(chain.rpcUrl) });
  lagging = createPublicClient({
    chain: devchainChain(chain.rpcUrl),
    transport: custom({ request: async (args: { method: string; params?: unknown }) => (args.method === 'eth_getLogs' ? [] : upstream.request(args as never)) }),
  });
  await chain.fundGas(relayer.address);
}, 120_000);

afterAll(async () => {
  await chain?.stop();
});

/** A funded payer's authorization of 100 to a fresh recipient, and its open ledger row. */
async function authorization() {
  const payer = privateKeyToAccount(generatePrivateKey());
  await chain.fund(payer.address, '1');
  const message = {
    from: payer.address,
    to: privateKeyToAccount(generatePrivateKey()).address,
    value: 100n,
    validAfter: 0n,
    validBefore: BigInt(Math.floor(Date.now() / 1000) + 3_600),
    nonce: toHex(randomBytes(32)),
  };
  const signature = await payer.signTypedData({ domain, types: transferWithAuthorizationTypes, primaryType: 'TransferWithAuthorization', message });
  const row = {
    network: `eip155:${DEVCHAIN_CHAIN_ID}`,
    asset: USDG_ADDRESS,
    payer: payer.address,
    payTo: message.to,
    amount: '100',
    nonce: message.nonce,
    validBefore: message.validBefore.toString(),
    txHash: null,
    fromBlock: (await client.getBlockNumber()).toString(),
    status: 'claimed',
  } as unknown as SettlementRow;
  return { payer, message, signature, row };
}

async function send(functionName: 'transferWithAuthorization' | 'cancelAuthorization', args: readonly unknown[]): Promise<Hex> {
  const wallet = createWalletClient({ account: relayer, chain: devchainChain(chain.rpcUrl), transport: http(chain.rpcUrl) });
  const hash = await wallet.writeContract({ address: USDG_ADDRESS, abi: usdg, functionName, args: args as never });
  expect((await client.waitForTransactionReceipt({ hash })).status).toBe('success');
  return hash;
}

describe('chainVerdict', () => {
  it('a used authorization whose logs the RPC does not return is pending, not failed; with its logs, settled', async () => {
    const { message, signature, row } = await authorization();
    const hash = await send('transferWithAuthorization', [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce, signature]);
    expect(await chainVerdict(lagging, row)).toEqual({ kind: 'pending' });
    expect(await chainVerdict(client, row)).toMatchObject({ kind: 'settled', txHash: hash });
  }, 60_000);

  it('an authorization its payer canceled is failed (nothing moved)', async () => {
    const { payer, message, row } = await authorization();
    const cancel = await payer.signTypedData({
      domain,
      types: { CancelAuthorization: [{ name: 'authorizer', type: 'address' }, { name: 'nonce', type: 'bytes32' }] },
      primaryType: 'CancelAuthorization',
      message: { authorizer: payer.address, nonce: message.nonce },
    });
    await send('cancelAuthorization', [payer.address, message.nonce, cancel]);
    expect(await chainVerdict(client, row)).toMatchObject({ kind: 'failed', reason: 'invalid_exact_evm_nonce_already_used', txHash: null });
  }, 60_000);
});
