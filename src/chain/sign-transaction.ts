// A transaction signed as viem's account.signTransaction signs it, byte for byte, with its hash taken by the
// WebAssembly keccak (keccak.ts): viem hashes the serialized transaction in JavaScript, ~0.7 ms for a
// relayer's 7 KB batch here. An account that cannot sign a bare hash signs the transaction itself.
import { parseSignature, serializeTransaction, type Hex, type TransactionSerializable } from 'viem';
import type { LocalAccount } from 'viem/accounts';
import { keccak256 } from './keccak.js';

export async function signTransaction(account: LocalAccount, tx: TransactionSerializable): Promise<Hex> {
  if (!account.sign) return account.signTransaction(tx);
  const signature = await account.sign({ hash: keccak256(serializeTransaction(tx)) });
  return serializeTransaction(tx, parseSignature(signature));
}
