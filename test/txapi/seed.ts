// Inserts published records straight into the index (the gap and query tests need exact shapes).
import { randomBytes } from 'node:crypto';
import { getAddress, toHex, type Address } from 'viem';
import { USDG_ADDRESS } from '../../src/chain/devchain.js';
import { paymentIdOf } from '../../src/chain/indexer/payment-id.js';
import type { Db } from '../../src/platform/db.js';
import { indexedPayments } from '../../src/modules/txapi/tables.js';

export interface SeedRow {
  recipient: Address;
  /** null seeds an indexed but unpublished row. */
  sequence: number | null;
  chainId?: number;
  blockNumber?: number;
  blockTimestamp?: number;
  value?: bigint;
  /** Default a random hash, log index 1. */
  transactionHash?: string;
  logIndex?: number;
}

export async function seedPublished(db: Db, rows: SeedRow[]): Promise<string[]> {
  const values = rows.map((r) => {
    const chainId = r.chainId ?? 4663;
    const payer = getAddress(toHex(randomBytes(20)));
    const nonce = toHex(randomBytes(32));
    const blockNumber = r.blockNumber ?? 1000 + (r.sequence ?? 0);
    return {
      chainId,
      token: USDG_ADDRESS,
      paymentId: paymentIdOf(chainId, USDG_ADDRESS, payer, nonce),
      payer,
      recipient: getAddress(r.recipient),
      value: String(r.value ?? 1000n),
      authorizationNonce: nonce,
      transactionHash: r.transactionHash ?? toHex(randomBytes(32)),
      logIndex: r.logIndex ?? 1,
      blockNumber,
      blockHash: toHex(randomBytes(32)),
      blockTimestamp: r.blockTimestamp ?? 1_700_000_000 + blockNumber,
      facilitator: getAddress(toHex(randomBytes(20))),
      indexedAt: new Date(),
      recipientSequence: r.sequence,
      signature: r.sequence === null ? null : '0x',
      signer: r.sequence === null ? null : getAddress(toHex(randomBytes(20))),
      publishedAt: r.sequence === null ? null : new Date(),
    };
  });
  await db.insert(indexedPayments).values(values);
  return values.map((v) => v.paymentId);
}

export const randomAddress = (): Address => getAddress(toHex(randomBytes(20)));
