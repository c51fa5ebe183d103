import { keccak256 as viemKeccak, parseTransaction, recoverTransactionAddress, type TransactionSerializable } from 'viem';
import { generatePrivateKey, privateKeyToAccount, toAccount } from 'viem/accounts';
import { beforeAll, describe, expect, it } from 'vitest';
import { keccak256, keccakReady } from './keccak.js';
import { signTransaction } from './sign-transaction.js';

const to = '0x000000000000000000000000000000000000dEaD';
const data = `0x${'ab'.repeat(7_000)}` as const;

describe('signTransaction', () => {
  beforeAll(() => keccakReady);

  it("signs the same bytes as viem's account.signTransaction (EIP-1559 and legacy), recoverable to the account", async () => {
    for (let i = 0; i < 20; i++) {
      const account = privateKeyToAccount(generatePrivateKey());
      const txs: TransactionSerializable[] = [
        { chainId: 31337, nonce: i, to, data, gas: 900_000n, maxFeePerGas: 2_000_000_000n + BigInt(i), maxPriorityFeePerGas: 1_000_000n },
        { chainId: 4663, nonce: i, to, data: '0x', gas: 21_000n, gasPrice: 1_000_000_000n, value: 1n },
      ];
      // The bare-hash path is the one taken (the fallback would give the same bytes).
      const signed: unknown[] = [];
      const watched = { ...account, sign: (args: { hash: `0x${string}` }) => (signed.push(args.hash), account.sign(args)) };
      for (const tx of txs) {
        const raw = await signTransaction(watched, tx);
        expect(raw).toBe(await account.signTransaction(tx));
        expect(keccak256(raw)).toBe(viemKeccak(raw));
        expect(await recoverTransactionAddress({ serializedTransaction: raw as never })).toBe(account.address);
        expect(parseTransaction(raw).nonce).toBe(i);
      }
      expect(signed).toHaveLength(txs.length);
    }
  });

  it('lets an account without a bare-hash signer sign the transaction itself', async () => {
    const inner = privateKeyToAccount(generatePrivateKey());
    const account = toAccount({ address: inner.address, signMessage: inner.signMessage, signTypedData: inner.signTypedData, signTransaction: inner.signTransaction });
    const tx: TransactionSerializable = { chainId: 31337, nonce: 1, to, data, gas: 900_000n, maxFeePerGas: 2n, maxPriorityFeePerGas: 1n };
    expect(await signTransaction(account, tx)).toBe(await inner.signTransaction(tx));
  });
});
