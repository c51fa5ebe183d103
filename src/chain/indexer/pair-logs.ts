import { getAddress, parseAbi, parseEventLogs, type Address, type Hex, type Log } from 'viem';

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
    const [authorization, transfer] = parseEventLogs({ abi: paymentEvents, logs: [used, moved], strict: true });
    if (authorization?.eventName !== 'AuthorizationUsed' || transfer?.eventName !== 'Transfer') continue;
    const payer = getAddress(authorization.args.authorizer);
    if (getAddress(transfer.args.from) !== payer) continue;
    payments.push({
      token: getAddress(used.address),
      payer,
      recipient: getAddress(transfer.args.to),
      value: transfer.args.value,
      nonce: authorization.args.nonce.toLowerCase() as Hex,
      logIndex: moved.logIndex,
    });
  }
  return payments;
}
