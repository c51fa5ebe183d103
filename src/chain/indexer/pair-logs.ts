import { getAddress, parseAbi, toEventSelector, type Address, type Hex, type Log } from 'viem';

export const paymentEvents = parseAbi([
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
]);
export const authorizationUsedEvent = paymentEvents[1];

/** A payment found in one transaction's logs, before block facts are attached. */
export interface PairedPayment {
  token: Address;
  payer: Address;
  recipient: Address;
  value: bigint;
  nonce: Hex;
  /** Index of the Transfer log: the payment's position in the chain, and what at most one success may claim. */
  logIndex: number;
}

/**
 * Pairs each `AuthorizationUsed(authorizer, nonce)` with the `Transfer` the same token emitted right after
 * it (the next log of the transaction) from that authorizer: EIP-3009 tokens mark the nonce used and move
 * the money in one call, with nothing in between. Any other Transfer in the transaction, however similar,
 * belongs to something else: a batch that spends one nonce on a 1-unit transfer and pays the price with
 * another authorization proves nothing about the first. USDG emits AuthorizationAlreadyUsed (and no
 * Transfer) for a reused nonce, and a bare Transfer proves no authorization, so only pairs count.
 */
export function pairPaymentLogs(logs: readonly Log[], tokens: ReadonlySet<string>): PairedPayment[] {
  const live = logs.filter((log) => !log.removed).sort((a, b) => (a.logIndex ?? 0) - (b.logIndex ?? 0));
  const payments: PairedPayment[] = [];
  for (let i = 0; i + 1 < live.length; i++) {
    const [used, moved] = [live[i]!, live[i + 1]!];
    if (!tokens.has(used.address.toLowerCase()) || used.address.toLowerCase() !== moved.address.toLowerCase()) continue;
    if (moved.logIndex !== (used.logIndex ?? -2) + 1) continue;
    const authorization = decodeAuthorizationUsed(used);
    const transfer = authorization && decodeTransfer(moved);
    if (!authorization || !transfer) continue;
    const payer = authorization.authorizer;
    if (transfer.from !== payer) continue;
    payments.push({
      token: getAddress(used.address),
      payer,
      recipient: transfer.to,
      value: transfer.value,
      nonce: authorization.nonce,
      logIndex: moved.logIndex,
    });
  }
  return payments;
}

// The two events decoded here by hand, with their selectors hashed once: viem's parseEventLogs hashes every ABI
// item's signature again for each log it decodes (keccak in JavaScript), which was ~12 % of a batched settle's
// CPU (each payment's receipt check pairs its batch's logs; bench/RESULTS.md, issue 46). Same rules as viem's strict
// decoding: the selector, both indexed topics present, and for Transfer a data word holding the value.
const TRANSFER = toEventSelector(paymentEvents[0]);
const AUTHORIZATION_USED = toEventSelector(authorizationUsedEvent);
const HEX_WORD = /^0x[0-9a-fA-F]{64}$/;

/** An address topic: its last 20 bytes, checksummed (as viem decodes it). */
const topicAddress = (topic: Hex): Address => getAddress(`0x${topic.slice(-40)}`);

function decodeAuthorizationUsed(log: Log): { authorizer: Address; nonce: Hex } | null {
  const [selector, authorizer, nonce] = log.topics;
  if (selector?.toLowerCase() !== AUTHORIZATION_USED || !authorizer || !nonce || !HEX_WORD.test(authorizer) || !HEX_WORD.test(nonce)) return null;
  return { authorizer: topicAddress(authorizer), nonce: nonce.toLowerCase() as Hex };
}

function decodeTransfer(log: Log): { from: Address; to: Address; value: bigint } | null {
  const [selector, from, to] = log.topics;
  const word = log.data.slice(0, 66);
  if (selector?.toLowerCase() !== TRANSFER || !from || !to || !HEX_WORD.test(from) || !HEX_WORD.test(to) || !HEX_WORD.test(word)) return null;
  return { from: topicAddress(from), to: topicAddress(to), value: BigInt(word) };
}
