import type { PendingSettlementStore } from '@x402/core/facilitator';
import { currentCall } from './call-context.js';
import type { SettlementLedger } from './ledger.js';

/**
 * The SDK's PendingSettlementStore on PostgreSQL, backed by the settlement ledger (keyed by the
 * payer's signature, as the exact EVM scheme does). When a receipt wait times out the scheme calls
 * set(): the row turns `broadcast` and any node's retry or the reconciler resolves it from the
 * chain. delete() is a no-op: the ledger's final status, not the SDK, ends a row's pending life.
 */
export class PgPendingSettlementStore implements PendingSettlementStore {
  constructor(private readonly ledger: SettlementLedger) {}

  async get(signature: string): Promise<string | undefined> {
    // Inside a settle of a row this call has just claimed there is nothing pending: skip the query.
    if (currentCall()?.settle?.signature === signature) return undefined;
    return this.ledger.pendingTxBySignature(signature);
  }

  set(signature: string, txHash: string): Promise<void> {
    return this.ledger.recordBroadcastBySignature(signature, txHash);
  }

  async delete(): Promise<void> {}
}
