import { getAddress, isAddressEqual, parseAbi, parseEventLogs, type Address, type Hash, type PublicClient } from 'viem';
import { UPTO_PERMIT2_PROXY } from '../../chain/x402-contracts.js';
import { executesPermit, permit2NonceUsed } from '../../x402/facilitator/permit2/chain.js';
import type { PaymentRow } from './store.js';

// The chain's word on an `upto` payment (a Permit2 permit for at most `amount`, settled by the seller's facilitator
// through x402UptoPermit2Proxy). The seller decides how much it takes, up to the signed maximum; what we book is what
// the chain shows it took, never what its PAYMENT-RESPONSE says. The permit's Permit2 nonce (the row's `nonce`, the
// 32-byte hex of the signed uint256: `nonceBitmap(payer, nonce >> 8)` bit `nonce & 255`) decides whether it can still
// fail:
//   unset → open until the deadline passes on chain, then `failed` (Permit2 refuses a permit past its deadline, so
//     nothing can move now; a seller that settled 0 never sends anything, so its permit ends here too and the
//     reservation is released).
//   set → money may have moved, so the payment is never `failed` again. The nonce is ours alone (random, unique per
//     wallet: wallet_payments_wallet_nonce_unique) and our wallets never invalidate nonces, so a set bit is this permit
//     executed. The transaction that spent it: the one the seller named if it executes this very permit (a direct
//     proxy call with this owner and nonce in its calldata), else one found among the payer's transfers to payTo since
//     the signing time; its Transfer paired with the proxy's Settled() is the amount booked (at most the maximum).
//   set, and no transaction of this permit recognised (the seller settled through a wrapper, a multicall, a contract
//     of its own: the logs cannot tell this permit from the payer's others) → open while the deadline has not passed
//     (a lagging log index may still show it), then `settled` at the signed maximum with no transaction and the error
//     field saying so: the most it can have moved, so the spend policy never counts less than was spent.

const LOG_WINDOW_BLOCKS = 10_000n;
const MAX_WINDOWS = 100;
const events = parseAbi(['event Settled()', 'event Transfer(address indexed from, address indexed to, uint256 value)']);

/** `settled` with `transaction` null: the nonce is spent but its transaction not recognised (booked at the maximum, `note` says so). */
export type UptoVerdict =
  | { kind: 'settled'; transaction: Hash | null; amount: bigint; note?: string }
  | { kind: 'failed'; reason: string }
  | { kind: 'open'; note?: string };

/** Chain seconds past a spent permit's deadline before a settlement not found is booked at the maximum. */
export const UNREADABLE_SETTLEMENT_GRACE_SECONDS = 300n;

/** The row's error field on a payment booked at its maximum because the amount moved could not be read. */
export const UNKNOWN_AMOUNT_NOTE =
  "settled amount unknown: booked at the signed maximum (the permit's Permit2 nonce is spent on chain, but no settlement of it through the upto proxy was recognised)";

export async function uptoVerdict(client: PublicClient, row: PaymentRow, payer: Address, notBefore: bigint): Promise<UptoVerdict> {
  const block = await client.getBlock({ blockTag: 'latest' });
  const nonce = BigInt(row.nonce);
  const expired = row.validBefore !== null && block.timestamp > BigInt(row.validBefore);
  if (!(await permit2NonceUsed(client, payer, nonce, block.number))) {
    return expired ? { kind: 'failed', reason: 'authorization_expired: the signed permit expired unused on chain; nothing moved' } : { kind: 'open' };
  }
  const named = (row.settlement as { transaction?: unknown } | null)?.transaction;
  const candidates = typeof named === 'string' && /^0x[0-9a-fA-F]{64}$/.test(named) ? [named as Hash] : [];
  for (const hash of candidates.concat(await transfersOf(client, row, payer, block.number, notBefore))) {
    const paid = await paidBy(client, hash, row, payer, nonce);
    if (paid !== null) return paid;
  }
  // Spent, and not recognised: once the deadline is well past (a lagging log index has caught up with a settlement
  // in the permit's last blocks, a shallow reorg has settled) nothing about this permit can change: booked whole.
  const settledForGood = row.validBefore !== null && block.timestamp > BigInt(row.validBefore) + UNREADABLE_SETTLEMENT_GRACE_SECONDS;
  if (settledForGood) return { kind: 'settled', transaction: null, amount: BigInt(row.amount), note: UNKNOWN_AMOUNT_NOTE };
  return { kind: 'open', note: "the permit's nonce is used on chain but its settlement transaction was not found" };
}

/** The permit's settlement in `hash`: the Transfer from the payer right before the proxy's Settled(). */
async function paidBy(client: PublicClient, hash: Hash, row: PaymentRow, payer: Address, nonce: bigint): Promise<UptoVerdict | null> {
  const tx = await client.getTransaction({ hash }).catch(() => null);
  if (!tx || !executesPermit(tx, 'permit2-upto', payer, nonce)) return null;
  const receipt = await client.getTransactionReceipt({ hash });
  if (receipt.status !== 'success') return null;
  const logs = receipt.logs.filter((l) => !l.removed).sort((a, b) => a.logIndex - b.logIndex);
  for (let i = 1; i < logs.length; i++) {
    const [moved, settled] = [logs[i - 1]!, logs[i]!];
    if (!isAddressEqual(settled.address, UPTO_PERMIT2_PROXY) || parseEventLogs({ abi: events, logs: [settled], eventName: 'Settled' }).length !== 1) continue;
    if (!isAddressEqual(moved.address, getAddress(row.asset))) continue;
    const [transfer] = parseEventLogs({ abi: events, logs: [moved], eventName: 'Transfer' });
    if (!transfer || !isAddressEqual(transfer.args.from, payer)) continue;
    // The witness fixes `to` and the permit the maximum, so the contract cannot do otherwise; were it to, the money
    // still left the wallet under this permit: booked (the larger of what moved and the maximum), never failed.
    if (!isAddressEqual(transfer.args.to, getAddress(row.payTo)) || transfer.args.value > BigInt(row.amount)) {
      const booked = transfer.args.value > BigInt(row.amount) ? transfer.args.value : BigInt(row.amount);
      return { kind: 'settled', transaction: hash, amount: booked, note: `settlement_mismatch: the permit moved ${transfer.args.value} to ${transfer.args.to} in ${hash}; booked ${booked}` };
    }
    return { kind: 'settled', transaction: hash, amount: transfer.args.value };
  }
  return null;
}

/** Transactions with a transfer from the payer to payTo since the signing time, newest first. */
async function transfersOf(client: PublicClient, row: PaymentRow, payer: Address, head: bigint, notBefore: bigint): Promise<Hash[]> {
  const found: Hash[] = [];
  let to = head;
  for (let i = 0; i < MAX_WINDOWS && to >= 0n; i++) {
    const from = to >= LOG_WINDOW_BLOCKS ? to - LOG_WINDOW_BLOCKS + 1n : 0n;
    const logs = await client.getContractEvents({ address: getAddress(row.asset), abi: events, eventName: 'Transfer', args: { from: payer, to: getAddress(row.payTo) }, fromBlock: from, toBlock: to });
    for (const log of logs.reverse()) if (!log.removed && log.transactionHash && !found.includes(log.transactionHash)) found.push(log.transactionHash);
    if (from === 0n || (await client.getBlock({ blockNumber: from })).timestamp < notBefore) break;
    to = from - 1n;
  }
  return found;
}
