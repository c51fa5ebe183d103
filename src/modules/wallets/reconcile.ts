import type { Logger } from 'pino';
import { getAddress, type Address, type Hash, type Hex, type PublicClient } from 'viem';
import { eip3009Abi } from '../../chain/eip3009.js';
import { pairPaymentLogs } from '../../chain/indexer/pair-logs.js';
import type { Clock } from '../../platform/clock.js';
import { MAX_AUTHORIZATION_SECONDS } from './challenge.js';
import { uptoVerdict } from './reconcile-upto.js';
import type { OpenPayment, PaymentRow, WalletsStore } from './store.js';

// A pay-and-call payment is `settled` only by the chain, never by the upstream's PAYMENT-RESPONSE
// alone: the upstream's receipt is recorded as what it said (`settlement`), and this reads the
// token. By the authorization (payer = the wallet, nonce):
//   authorizationState(payer, nonce) true → the AuthorizationUsed log → its transaction's receipt →
//     a Transfer of exactly `amount` from the payer to `payTo` paired with it → `settled` with that
//     transaction; used without such a transfer → `failed`.
//   false, and the chain's time is past the latest validBefore we could have signed → `failed`
//     (expired unused: it can never move money now).
//   otherwise the payment stays open (`pending` / `unknown`) and is looked at again.
// An `upto` payment (a Permit2 permit for at most `amount`) is judged by reconcile-upto.ts, and settles for what
// the chain moved: its row's amount becomes that (the reservation was the maximum; the booking is the use). Once its
// Permit2 nonce is spent it is never failed: a settlement we cannot read is booked at the maximum, `error` saying so.
// Every move is one conditional UPDATE from an open state, so the request that made the payment and
// the worker can both run this at any time; the first writer wins, the other matches no row.

/**
 * Rows signed before validBefore was recorded (old rows, written right after signing): it is at most the
 * signing time plus MAX_AUTHORIZATION_SECONDS, so createdAt + this bound is past it. The minute covers
 * rounding. Rows written since record the planned validBefore before signing.
 */
const EXPIRY_BOUND_SECONDS = MAX_AUTHORIZATION_SECONDS + 60;
/** Blocks per eth_getLogs call while looking back for the AuthorizationUsed log. */
const LOG_WINDOW_BLOCKS = 10_000n;
/** The log cannot be older than the signature: stop looking back this long before createdAt. */
const LOOKBACK_SLACK_SECONDS = 600;
const MAX_WINDOWS = 100;

export type Verdict =
  /**
   * `amount`: what the chain moved, when it may be less than the row's (an `upto` maximum). `transaction` null and
   * `note` set: an `upto` permit spent on chain by a transaction not recognised, booked at its maximum.
   */
  | { kind: 'settled'; transaction: Hash | null; amount?: bigint; note?: string }
  | { kind: 'failed'; reason: string }
  | { kind: 'open'; note?: string };

export interface ChainPort {
  /** CAIP-2 network the client reads; payments on other networks cannot be checked here. */
  network: string;
  client: PublicClient;
}

export class PaymentReconciler {
  constructor(
    private readonly store: WalletsStore,
    private readonly chain: ChainPort,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  canCheck(row: Pick<PaymentRow, 'network'>): boolean {
    return row.network === this.chain.network;
  }

  /** Reads the chain and applies its verdict; returns the row as it is now. Throws when the chain cannot be read. */
  async reconcile(payment: OpenPayment): Promise<PaymentRow> {
    const verdict = await this.verdict(payment);
    const now = this.clock.now();
    if (verdict.kind === 'settled') {
      if (verdict.note) this.log.warn({ paymentId: payment.row.id, note: verdict.note }, 'pay-and-call payment settled with a note');
      return (await this.store.settlePayment(payment.row.id, verdict.transaction, now, verdict.amount, verdict.note)) ?? (await this.store.payment(payment.row.id))!;
    }
    if (verdict.kind === 'failed') return (await this.store.failPayment(payment.row.id, verdict.reason, now)) ?? (await this.store.payment(payment.row.id))!;
    if (verdict.note) this.log.warn({ paymentId: payment.row.id, note: verdict.note }, 'pay-and-call payment stays open');
    return payment.row;
  }

  async verdict({ row, payer }: OpenPayment): Promise<Verdict> {
    const client = this.chain.client;
    // batch-settlement: a channel voucher moves nothing by itself; the channel decides it (channel-pay.ts, channel-close.ts).
    if (row.scheme === 'batch-settlement') return { kind: 'open' };
    // upto: a Permit2 permit, settled for what the seller used (reconcile-upto.ts).
    if (row.scheme === 'upto') return uptoVerdict(client, row, payer, BigInt(Math.floor(row.createdAt.getTime() / 1000) - LOOKBACK_SLACK_SECONDS));
    const asset = getAddress(row.asset);
    // Block first: whatever is mined after it cannot pass a validBefore that has already passed.
    const block = await client.getBlock({ blockTag: 'latest' });
    const used = await client.readContract({ address: asset, abi: eip3009Abi, functionName: 'authorizationState', args: [payer, row.nonce as Hex], blockNumber: block.number });
    if (!used) {
      const expiredBy = row.validBefore !== null ? BigInt(row.validBefore) : BigInt(Math.floor(row.createdAt.getTime() / 1000) + EXPIRY_BOUND_SECONDS);
      if (block.timestamp >= expiredBy) return { kind: 'failed', reason: 'authorization_expired: the signed authorization expired unused on chain; nothing moved' };
      return { kind: 'open' };
    }
    const transaction = await this.findUse(asset, payer, row.nonce as Hex, block.number, BigInt(Math.floor(row.createdAt.getTime() / 1000) - LOOKBACK_SLACK_SECONDS));
    if (!transaction) return { kind: 'open', note: 'the authorization is used on chain but its AuthorizationUsed log was not found' };
    const receipt = await client.getTransactionReceipt({ hash: transaction });
    const pair = receipt.status === 'success' ? pairPaymentLogs(receipt.logs, new Set([asset.toLowerCase()])).find((p) => p.payer === payer && p.nonce === row.nonce.toLowerCase()) : undefined;
    if (pair && pair.recipient === getAddress(row.payTo) && pair.value === BigInt(row.amount)) return { kind: 'settled', transaction };
    return { kind: 'failed', reason: `settlement_mismatch: the authorization was used in ${transaction} without a transfer of ${row.amount} to ${row.payTo}` };
  }

  /** The transaction that emitted AuthorizationUsed(payer, nonce), looking back window by window to the signing time. */
  private async findUse(asset: Address, payer: Address, nonce: Hex, head: bigint, notBefore: bigint): Promise<Hash | null> {
    const client = this.chain.client;
    let to = head;
    for (let i = 0; i < MAX_WINDOWS && to >= 0n; i++) {
      const from = to >= LOG_WINDOW_BLOCKS ? to - LOG_WINDOW_BLOCKS + 1n : 0n;
      const logs = await client.getContractEvents({ address: asset, abi: eip3009Abi, eventName: 'AuthorizationUsed', args: { authorizer: payer, nonce }, fromBlock: from, toBlock: to });
      const found = logs.find((l) => !l.removed && l.transactionHash);
      if (found) return found.transactionHash;
      if (from === 0n || (await client.getBlock({ blockNumber: from })).timestamp < notBefore) return null;
      to = from - 1n;
    }
    return null;
  }
}
