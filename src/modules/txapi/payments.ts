import { and, asc, eq } from 'drizzle-orm';
import { getAddress, type Address, type Hex } from 'viem';
import type { Db } from '../../platform/db.js';
import { indexedPayments } from './tables.js';

/** A payment as other modules see it (intent reconciliation, the transaction API). */
export interface IndexedPayment {
  paymentId: Hex;
  chainId: number;
  token: Address;
  payer: Address;
  recipient: Address;
  value: bigint;
  authorizationNonce: Hex;
  transactionHash: Hex;
  logIndex: number;
  blockNumber: number;
  blockTimestamp: number;
  facilitator: Address;
  /** Set once the block is past the finality depth; a row without it may still vanish in a reorg. */
  recipientSequence: number | null;
  final: boolean;
}

type Row = typeof indexedPayments.$inferSelect;

/** Read access to the payment index; other modules use this, never the table. */
export class IndexedPayments {
  constructor(private readonly db: Db) {}

  /** The payment that consumed (token, authorizer, nonce) on a chain, if indexed. */
  async findByAuthorization(chainId: number, token: Address, authorizer: Address, nonce: Hex): Promise<IndexedPayment | null> {
    const [row] = await this.db
      .select()
      .from(indexedPayments)
      .where(
        and(
          eq(indexedPayments.chainId, chainId),
          eq(indexedPayments.token, getAddress(token)),
          eq(indexedPayments.payer, getAddress(authorizer)),
          eq(indexedPayments.authorizationNonce, nonce.toLowerCase()),
        ),
      )
      .limit(1);
    return row ? toPayment(row) : null;
  }

  /** Payments carried by one transaction, in log order (usually one). */
  async findByTransaction(hash: Hex): Promise<IndexedPayment[]> {
    const rows = await this.db
      .select()
      .from(indexedPayments)
      .where(eq(indexedPayments.transactionHash, hash.toLowerCase()))
      .orderBy(asc(indexedPayments.chainId), asc(indexedPayments.logIndex));
    return rows.map(toPayment);
  }

  async findByPaymentId(paymentId: Hex): Promise<IndexedPayment | null> {
    const [row] = await this.db.select().from(indexedPayments).where(eq(indexedPayments.paymentId, paymentId.toLowerCase()));
    return row ? toPayment(row) : null;
  }
}

function toPayment(row: Row): IndexedPayment {
  return {
    paymentId: row.paymentId as Hex,
    chainId: row.chainId,
    token: row.token as Address,
    payer: row.payer as Address,
    recipient: row.recipient as Address,
    value: BigInt(row.value),
    authorizationNonce: row.authorizationNonce as Hex,
    transactionHash: row.transactionHash as Hex,
    logIndex: row.logIndex,
    blockNumber: row.blockNumber,
    blockTimestamp: row.blockTimestamp,
    facilitator: row.facilitator as Address,
    recipientSequence: row.recipientSequence,
    final: row.recipientSequence !== null,
  };
}
