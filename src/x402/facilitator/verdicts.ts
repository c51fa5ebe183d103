// One place that knows which judgment a settlement row takes, by its kind (x402_settlements.kind): EIP-3009 rows
// (exact payments and batch-settlement deposits, whose authorization is the token's) by their AuthorizationUsed +
// Transfer pair, Permit2 rows by the Transfer paired with the proxy's settlement event. Every path that judges a
// row (a settle's own receipt, a front-run, the reconcilers) comes through here.
import type { Log, PublicClient } from 'viem';
import type { BlockClock } from '../../chain/block-clock.js';
import type { SettlementRow } from '../tables.js';
import { channelVerdict, judgeClaimReceipt, judgeRefundReceipt, operationOf } from './batch/chain.js';
import { chainVerdict, type ChainVerdict } from './chain-verdict.js';
import { expectedOf, judgePermit2Receipt, permit2Verdict } from './permit2/chain.js';
import { judgeReceipt, type ReceiptVerdict } from './receipt.js';

const isPermit2Row = (row: Pick<SettlementRow, 'kind'>) => row.kind === 'permit2-exact' || row.kind === 'permit2-upto';
/** batch-settlement claims and refunds, judged by the channel's own events (batch/chain.ts); deposits are EIP-3009. */
const isChannelRow = (row: Pick<SettlementRow, 'kind'>) => row.kind === 'batch-claim' || row.kind === 'batch-refund';

/** Decides an open row from the chain alone; `pending` while undecidable. */
export function settlementVerdict(client: PublicClient, row: SettlementRow, catchUp?: BlockClock): Promise<ChainVerdict> {
  if (isPermit2Row(row)) return permit2Verdict(client, row, catchUp);
  if (isChannelRow(row)) return channelVerdict(client, row);
  return chainVerdict(client, row, catchUp);
}

/** Judges the receipt of the transaction this row's settle sent. */
export function judgeRowReceipt(row: SettlementRow, receipt: { status: string; logs: readonly Log[] }): ReceiptVerdict {
  if (isPermit2Row(row)) return judgePermit2Receipt(receipt, expectedOf(row));
  if (row.kind === 'batch-claim') return judgeClaimReceipt(receipt, operationOf(row).channelId, BigInt(row.amount));
  if (row.kind === 'batch-refund') return judgeRefundReceipt(receipt, operationOf(row).channelId);
  return judgeReceipt(receipt, { asset: row.asset, payer: row.payer, nonce: row.nonce, payTo: row.payTo, amount: row.amount });
}
