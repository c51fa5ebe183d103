// Decides an open settlement from the chain alone, never by sending anything. Used by retries of a
// settle someone else started, by the reconciler after a crash, and after a receipt wait timed out.
// Every read is pinned to one block (the nonce's state, the logs, the time), so a verdict never mixes
// two views of the chain, and time is that block's: no node's clock decides an expiry.
import { getAddress, TransactionNotFoundError, TransactionReceiptNotFoundError, type Hash, type PublicClient } from 'viem';
import type { BlockClock } from '../../chain/block-clock.js';
import { eip3009Abi } from '../../chain/eip3009.js';
import type { SettlementRow } from '../tables.js';
import { judgeReceipt } from './receipt.js';
import { Reason } from './reasons.js';

export type ChainVerdict =
  /** `logIndex`: the Transfer paired with this authorization's AuthorizationUsed log. */
  | { kind: 'settled'; txHash: Hash; logIndex: number }
  | { kind: 'failed'; reason: string; message: string; txHash: Hash | null }
  | { kind: 'pending' };

/**
 * `catchUp` (the chain's block clock) is asked only when the verdict would turn on an expiry the latest
 * block has not reached while this node thinks it has: on the embedded devchain, which mines only on
 * demand, it brings the chain's time up to now (on a real chain it reads the latest block). The node's
 * clock only triggers the read; the pinned block's time decides.
 */
export async function chainVerdict(client: PublicClient, row: SettlementRow, catchUp?: BlockClock): Promise<ChainVerdict> {
  const expected = { asset: row.asset, payer: row.payer, payTo: row.payTo, amount: row.amount, nonce: row.nonce };
  let ownFailure: ChainVerdict | null = null;
  if (row.txHash) {
    const receipt = await maybeReceipt(client, row.txHash as Hash);
    if (receipt) {
      const verdict = judgeReceipt(receipt, expected);
      if (verdict.ok) return { kind: 'settled', txHash: row.txHash as Hash, logIndex: verdict.logIndex };
      // Our transaction did not move the money; maybe another one used the authorization.
      ownFailure = { kind: 'failed', reason: verdict.reason, message: verdict.message, txHash: row.txHash as Hash };
    } else if (await isKnownTransaction(client, row.txHash as Hash)) {
      return { kind: 'pending' };
    }
  }

  const validBefore = BigInt(row.validBefore);
  let { block, used } = await pinnedState(client, row);
  if (!used && catchUp && block.timestamp < validBefore && BigInt(Math.floor(Date.now() / 1000)) >= validBefore) {
    await catchUp();
    ({ block, used } = await pinnedState(client, row));
  }
  if (used) {
    const log = await nonceLog(client, row, 'AuthorizationUsed', block.number);
    if (log?.transactionHash) {
      const receipt = await client.getTransactionReceipt({ hash: log.transactionHash });
      const verdict = judgeReceipt(receipt, expected);
      return verdict.ok
        ? { kind: 'settled', txHash: log.transactionHash, logIndex: verdict.logIndex }
        : { kind: 'failed', reason: verdict.reason, message: verdict.message, txHash: log.transactionHash };
    }
    // Used, and no log says by what: only a found cancellation is a verdict. An RPC behind a load balancer
    // can answer the state from a synced backend and the logs from a lagging one (an empty list, no error);
    // calling that "failed" would record as failed a transfer that moved. Ask again next pass.
    if (!(await nonceLog(client, row, 'AuthorizationCanceled', block.number))) return { kind: 'pending' };
    return ownFailure ?? {
      kind: 'failed',
      reason: Reason.nonceAlreadyUsed,
      message: 'the authorization was canceled by its payer; nothing moved',
      txHash: null,
    };
  }
  if (ownFailure) return ownFailure;
  if (block.timestamp >= validBefore) {
    return {
      kind: 'failed',
      reason: Reason.validBefore,
      message: 'the authorization expired without being used; nothing moved',
      txHash: (row.txHash as Hash | null) ?? null,
    };
  }
  return { kind: 'pending' };
}

/** The authorization's log of one kind between the settlement's first block and `toBlock`, if any. */
async function nonceLog(client: PublicClient, row: SettlementRow, eventName: 'AuthorizationUsed' | 'AuthorizationCanceled', toBlock: bigint) {
  const logs = await client.getContractEvents({
    address: row.asset as `0x${string}`,
    abi: eip3009Abi,
    eventName,
    args: { authorizer: row.payer as `0x${string}`, nonce: row.nonce as `0x${string}` },
    fromBlock: BigInt(row.fromBlock),
    toBlock,
  });
  return logs.find((l) => !l.removed && getAddress(l.address) === getAddress(row.asset)) ?? null;
}

/** The latest block, and the authorization's state at exactly that block. */
async function pinnedState(client: PublicClient, row: SettlementRow) {
  const block = await client.getBlock({ blockTag: 'latest' });
  const used = await client.readContract({
    address: row.asset as `0x${string}`,
    abi: eip3009Abi,
    functionName: 'authorizationState',
    args: [row.payer as `0x${string}`, row.nonce as `0x${string}`],
    blockNumber: block.number,
  });
  return { block, used };
}

export async function maybeReceipt(client: PublicClient, hash: Hash) {
  try {
    return await client.getTransactionReceipt({ hash });
  } catch (error) {
    if (error instanceof TransactionReceiptNotFoundError) return null;
    throw error;
  }
}

export async function isKnownTransaction(client: PublicClient, hash: Hash): Promise<boolean> {
  try {
    await client.getTransaction({ hash });
    return true;
  } catch (error) {
    if (error instanceof TransactionNotFoundError) return false;
    throw error;
  }
}
